"""Which pronoun? Does the model write sein- or ihr- for 'its' as the antecedent's German gender asks, and
where did it look when it chose (the paper's Figure 4, asked of the output instead of one head). The model runs in
core.studies.pronouns, cached by app.cache; the figures are app.figures.pronouns."""
import streamlit as st

from app import cache, url_state
from app.checkpoints import UNTRAINED, page_problem
from app.display import show_figure
from app.figures.pronouns import attention_from_figure, encoder_rows, form_figure, writing_rows
from app.why import why_section
from app.lm.common import translation_or_stop
from core.studies import pronouns as P
from core.tokenizer import bare_word

GENDERS = {"f": "feminine (die)", "m": "masculine (der)", "n": "neuter (das)", "?": "I don't know"}
OWN = -1
OWN_SENTENCE = "The bank raised its interest rates."
CONTEXTS = {"reference": "the set's translation", "model": "the model's own translation"}


def link_params(n_items: int) -> list[url_state.Param]:
    """What a link to this page holds: ?sentence=7 (of the set) or ?sentence=own&text=...&gender=f."""
    sentences = {"own": OWN} | {str(i + 1): i for i in range(n_items)}
    return [url_state.choice("sentence", "pr_item", sentences, 0, "sentence of the set"),
            url_state.text("text", "pr_src", OWN_SENTENCE), url_state.text("tgt", "pr_tgt"),
            url_state.choice("gender", "pr_gender", list(GENDERS), "?", "gender"),
            url_state.choice("german", "pr_context", list(CONTEXTS), "reference", "German to read")]


def introduction(name: str) -> None:
    st.write("English *its* has one form; German has two families. When the thing *its* refers to (its antecedent) "
             "is feminine in German, *its* becomes **ihr-** (*die Bank → ihre Zinsen*); when it is masculine or "
             "neuter, **sein-** (*der Rat → seinen Haushalt*, *das Unternehmen → seine Kunden*). The ending (-e, -en, "
             "-em, -er, -es) follows the noun after it. So the model must resolve the anaphor to pick the stem: "
             "below is its probability of each form, at the moment the decoder writes it, and where it looked.")
    if name == UNTRAINED:
        st.warning("No trained checkpoint is loaded: this model is random, so its choices are noise. "
                   "Pick a trained one in the sidebar.")


def own_sentence() -> tuple:
    """The reader's sentence: (English, typed German, pronoun, antecedent, gender), or a message and st.stop()."""
    st.session_state.setdefault("pr_src", OWN_SENTENCE)
    src = st.text_input("English sentence with 'its' (or 'it')", key="pr_src")
    tgt_typed = st.text_input("German translation (leave empty to use the model's own)", key="pr_tgt",
                              help="Teacher forcing: the model reads these German words up to the pronoun.")
    words, found = src.split(), P.find_pronoun(src)
    if found is None:
        st.error("The sentence has no 'its', 'it' or 'they': this page looks at how the model translates one. "
                 "Try *The party lost its leader.*")
        st.stop()
    at, pronoun = found
    if at == 0:
        st.error(f"'{words[0]}' is the first word, so there is nothing before it for it to refer to.")
        st.stop()
    c1, c2 = st.columns(2)
    ante_i = c1.selectbox(f"What does '{pronoun}' refer to?", range(at), index=P.guess_antecedent(words, at),
                          format_func=lambda i: words[i], key=f"pr_ante_{src}")
    antecedent = bare_word(words[ante_i])
    st.session_state.setdefault("pr_gender", "?")
    gender = c2.radio(f"German gender of '{antecedent}'", list(GENDERS), format_func=GENDERS.get,
                      key="pr_gender", horizontal=True)
    return src, tgt_typed, pronoun, antecedent, gender


def set_sentence(item: dict) -> tuple:
    """A sentence of the set: (English, German to read, pronoun, antecedent, gender)."""
    context = st.radio("German words the decoder reads before the pronoun", list(CONTEXTS), format_func=CONTEXTS.get,
                       key="pr_context", horizontal=True)
    st.caption(f"The set's translation: *{item['de']}* Antecedent: *{item['antecedent']}*, in German "
               f"*{item['antecedent_de']}*, {GENDERS[item['gender']].split()[0]}; {item['distance']} word(s) from "
               f"'{item['pronoun']}'.")
    return (item["en"], item["de"] if context == "reference" else "", item["pronoun"], item["antecedent"],
            item["gender"])


def german_read(ckpt, src: str, tgt_typed: str) -> tuple[str, str]:
    """(the German the decoder reads: typed, or else the model's own greedy translation; that translation)."""
    try:
        own = cache.attend(ckpt, src)                                  # the model's own (greedy) translation
    except ValueError as e:
        st.error(str(e))
        st.stop()
    tgt = tgt_typed.strip() or own.tgt
    if not tgt:
        st.warning("The model's own translation is empty, so there is no German pronoun to look at. "
                   "Pick the set's translation above, or type your own sentence with a German translation.")
        st.stop()
    return tgt, own.tgt


def the_choice(ckpt, src: str, tgt: str, own: str, pronoun: str):
    """The model's FormChoice where the German has a form of the pronoun, or a message and st.stop()."""
    try:
        result = cache.attend(ckpt, src, tgt)
        choice = cache.form_choice(ckpt, src, tgt, pronoun)
    except ValueError as e:
        st.error(str(e))
        st.stop()
    for notice in result.notices:
        st.info(notice)
    st.write(f"**The model's own translation:** {own or '(nothing)'}")
    if choice is None:
        st.warning(f"The German *{tgt or '(empty)'}* has none of the forms '{pronoun}' can become "
                   f"({', '.join(P.FORMS[pronoun])}), so there is no moment to look at. Type a German translation "
                   "that has one (pick 'Type your own sentence' above), or pick another sentence.")
        st.stop()
    return choice


def choice_metrics(choice, gender: str) -> None:
    """The model's choice, whether it is right for the antecedent, and each form's probability."""
    feminine = None if gender == "?" else gender in P.FEMININE
    right = None if feminine is None else P.right_for(choice.chosen, gender)
    c1, c2, c3 = st.columns(3)
    c1.metric("The model's choice", choice.chosen, help="The most probable form at this position, given the "
              "source and the German words before it.")
    c2.metric("Right for the antecedent?", "—" if right is None else ("yes" if right else "no"),
              help="ihr- (or sie) for a feminine antecedent, sein- (or er / es) for a masculine or neuter one.")
    c3.metric("Share of feminine forms", f"{choice.feminine_share:.0%}",
              help="How much of the probability of these forms goes to ihr- / sie.")
    st.caption(f"After *{choice.prefix or '(the start)'}* … the German has **{choice.written}**.")
    show_figure(form_figure(choice.table, choice.written, feminine,
                            title=f"Which form comes next after '…{choice.prefix[-40:]}'?" if choice.prefix
                            else "Which form does the translation start with?"),
                "pronoun_forms", key="pr_forms")


def sentence_test(ckpt, item: dict) -> None:
    """The set's contrastive test of this item: is the right German more probable than the wrong one?"""
    right, wrong = cache.sentence_test(ckpt, item)
    st.write(f"**Whole-sentence test** (how scripts/evaluate_pronouns.py scores this item): "
             f"log P(*{item['de']}*) = {right:.2f}, log P(*{item['de_wrong']}*) = {wrong:.2f}: "
             + ("**passed**, the right sentence is more probable." if right > wrong else "**failed**, the wrong one "
                "is more probable."))


def where_it_looked(ckpt, model, src: str, tgt: str, pronoun: str, antecedent: str, written: str) -> None:
    """Encoder self-attention from the pronoun, and cross-attention while the decoder writes the form."""
    st.subheader("Where it looked")
    try:
        g = cache.gaze(ckpt, src, tgt, pronoun, antecedent, written)
    except ValueError as e:
        st.error(str(e))
        st.stop()
    marks = {g.antecedent_word: "antecedent", g.pronoun_word: pronoun}
    left, right = st.columns(2)
    with left:
        attn, rows, cols = encoder_rows(g.enc, g.pronoun_word, g.layer)
        title = f"Encoder: from '{pronoun}', layer {g.layer + 1}"
        show_figure(attention_from_figure(attn, rows, cols, marks, title=title), "pronoun_encoder", key="pr_enc")
        st.caption(f"Encoder self-attention from '{pronoun}' in layer {g.layer + 1} of {model.cfg.N}, the layer whose "
                   f"two best heads put the most weight on '{antecedent}' (as the paper's Figure 4 picks heads).")
    with right:
        attn, rows, cols = writing_rows(g.cross, g.written_word)
        title = f"Cross-attention while writing '{written}'"
        show_figure(attention_from_figure(attn, rows, cols, marks, title=title), "pronoun_cross", key="pr_cross")
        st.caption("Encoder-decoder attention of every decoder layer and head at the step that writes "
                   f"'{written}': which source words the decoder read as it chose.")


def what_decided(ckpt, model, src: str, choice) -> None:
    """Why the model's form and not the likeliest form of the other gender (app.why's section)."""
    other_gender = choice.table[choice.table.form.map(P.is_feminine_form) != P.is_feminine_form(choice.chosen)]
    if other_gender.empty:
        return
    other = other_gender.sort_values("logprob").form.iloc[-1]
    st.subheader(f"What decided '{choice.chosen}' and not '{other}'?")
    st.write("Attention shows where the step looked; this asks what the choice depended on: each source word's "
             f"push towards '{choice.chosen}' (red) or '{other}' (blue), beside the same step's attention.")
    why_section(ckpt, model, src, (choice.prefix,) if choice.prefix else (), (choice.chosen,), (other,), "pr_why",
                choose_head=True)


st.title("Which pronoun?")
ckpt, model = cache.model_or_stop()
translation_or_stop("pronouns", model)      # a language model: one line why not
if problem := page_problem("pronouns", model.card):       # an imported model of other languages
    st.info(problem)
    st.stop()
introduction(ckpt.name)
items = cache.pronoun_set()
link = link_params(len(items))
url_state.restore("pronouns", link)
st.session_state.setdefault("pr_item", 0)
pick = st.selectbox("Sentence", [OWN] + list(range(len(items))), key="pr_item",
                    format_func=lambda i: "✎ Type your own sentence" if i == OWN
                    else f"{items[i]['en']}  ({GENDERS[items[i]['gender']].split()[0]} antecedent)",
                    help=f"{len(items)} sentences of the contrastive pronoun set (core/probes/pronouns_en_de.jsonl), "
                         "or your own.")
item = None if pick == OWN else items[pick]
url_state.publish("pronouns", link)                  # before a sentence without a pronoun stops the page
src, tgt_typed, pronoun, antecedent, gender = own_sentence() if item is None else set_sentence(item)
url_state.publish("pronouns", link)
tgt, own = german_read(ckpt, src, tgt_typed)
choice = the_choice(ckpt, src, tgt, own, pronoun)
choice_metrics(choice, gender)
if item is not None:
    sentence_test(ckpt, item)
where_it_looked(ckpt, model, src, tgt, pronoun, antecedent, choice.written)
what_decided(ckpt, model, src, choice)
