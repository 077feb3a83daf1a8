"""Which pronoun? Does the model write sein- or ihr- for 'its' as the antecedent's German gender asks, and
where did it look when it chose (the paper's Figure 4, asked of the output instead of one head)."""
import streamlit as st

from app.common import UNTRAINED, get_attention, model_or_stop, show_figure
from app.figures.pronouns import attention_from_figure, encoder_rows, form_figure, writing_rows
from core.studies import paper_figures as pf
from core.studies import pronouns as P

GENDERS = {"f": "feminine (die)", "m": "masculine (der)", "n": "neuter (das)", "?": "I don't know"}
OWN = -1

st.title("Which pronoun?")
name, model = model_or_stop()
st.write("English *its* has one form; German has two families. When the thing *its* refers to (its antecedent) "
         "is feminine in German, *its* becomes **ihr-** (*die Bank → ihre Zinsen*); when it is masculine or "
         "neuter, **sein-** (*der Rat → seinen Haushalt*, *das Unternehmen → seine Kunden*). The ending (-e, -en, "
         "-em, -er, -es) follows the noun after it. So the model must resolve the anaphor to pick the stem: "
         "below is its probability of each form, at the moment the decoder writes it, and where it looked.")
if name == UNTRAINED:
    st.warning("No trained checkpoint is loaded: this model is random, so its choices are noise. "
               "Pick a trained one in the sidebar.")


@st.cache_data(show_spinner=False)
def pronoun_set() -> list[dict]:
    return P.load_pronoun_set()


items = pronoun_set()
pick = st.selectbox("Sentence", [OWN] + list(range(len(items))), index=1, key="pr_item",
                    format_func=lambda i: "✎ Type your own sentence" if i == OWN
                    else f"{items[i]['en']}  ({GENDERS[items[i]['gender']].split()[0]} antecedent)",
                    help=f"{len(items)} sentences of the contrastive pronoun set (core/probes/pronouns_en_de.jsonl), "
                         "or your own.")
if pick == OWN:
    src = st.text_input("English sentence with 'its' (or 'it')", "The bank raised its interest rates.", key="pr_src")
    tgt_typed = st.text_input("German translation (leave empty to use the model's own)", "", key="pr_tgt",
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
    antecedent = P.plain(words[ante_i])
    gender = c2.radio(f"German gender of '{antecedent}'", list(GENDERS), format_func=GENDERS.get, index=3,
                      key="pr_gender", horizontal=True)
    item = None
else:
    item = items[pick]
    src, pronoun, antecedent, gender = item["en"], item["pronoun"], item["antecedent"], item["gender"]
    context = st.radio("German words the decoder reads before the pronoun", ["reference", "model"],
                       format_func={"reference": "the set's translation", "model": "the model's own translation"}.get,
                       key="pr_context", horizontal=True)
    tgt_typed = item["de"] if context == "reference" else ""
    st.caption(f"The set's translation: *{item['de']}* Antecedent: *{antecedent}*, in German "
               f"*{item['antecedent_de']}*, {GENDERS[gender].split()[0]}; {item['distance']} word(s) from '{pronoun}'.")

try:
    own = get_attention(name, src)                                  # the model's own (greedy) translation
except ValueError as e:
    st.error(str(e))
    st.stop()
tgt = tgt_typed.strip() or own.tgt
if not tgt:
    st.warning("The model's own translation is empty, so there is no German pronoun to look at. "
               "Pick the set's translation above, or type your own sentence with a German translation.")
    st.stop()
try:
    result = get_attention(name, src, tgt)
    choice = P.form_probabilities(model, src, tgt, pronoun)
except ValueError as e:
    st.error(str(e))
    st.stop()
for notice in result.notices:
    st.info(notice)
st.write(f"**The model's own translation:** {own.tgt or '(nothing)'}")
forms = ", ".join(P.FORMS[pronoun])
if choice is None:
    st.warning(f"The German *{tgt or '(empty)'}* has none of the forms '{pronoun}' can become ({forms}), "
               "so there is no moment to look at. Type a German translation that has one (pick "
               "'Type your own sentence' above), or pick another sentence.")
    st.stop()

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
if item is not None:
    right_s, wrong_s = model.score(src, [item["de"], item["de_wrong"]])
    passed = right_s.total > wrong_s.total
    st.write(f"**Whole-sentence test** (how scripts/evaluate_pronouns.py scores this item): "
             f"log P(*{item['de']}*) = {right_s.total:.2f}, log P(*{item['de_wrong']}*) = {wrong_s.total:.2f}: "
             + ("**passed**, the right sentence is more probable." if passed else "**failed**, the wrong one is "
                "more probable."))

st.subheader("Where it looked")
enc, cross = result.view("enc_self", words=True), result.view("cross", words=True)     # word maps and their labels
try:
    src_word = pf.find_words(enc.rows, pronoun)[0]
    ante_word = pf.find_words(enc.cols, antecedent)[0]
    out_word = pf.find_words(cross.rows, choice.written)[0]           # decoder rows: the word each step writes
    layer = pf.best_layer(pf.dependency_scores(enc, pronoun, [antecedent]), k=2)
except ValueError as e:
    st.error(str(e))
    st.stop()
marks = {ante_word: "antecedent", src_word: pronoun}
left, right_col = st.columns(2)
with left:
    attn, rows, cols = encoder_rows(enc, src_word, layer)
    title = f"Encoder: from '{pronoun}', layer {layer + 1}"
    show_figure(attention_from_figure(attn, rows, cols, marks, title=title), "pronoun_encoder", key="pr_enc")
    st.caption(f"Encoder self-attention from '{pronoun}' in layer {layer + 1} of {model.cfg.N}, the layer whose two "
               f"best heads put the most weight on '{antecedent}' (as the paper's Figure 4 picks heads).")
with right_col:
    attn, rows, cols = writing_rows(cross, out_word)
    title = f"Cross-attention while writing '{choice.written}'"
    show_figure(attention_from_figure(attn, rows, cols, marks, title=title), "pronoun_cross", key="pr_cross")
    st.caption("Encoder-decoder attention of every decoder layer and head at the step that writes "
               f"'{choice.written}': which source words the decoder read as it chose.")
