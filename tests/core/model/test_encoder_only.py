"""The encoder-only model (BERT, RoBERTa, DistilBERT): the paper's encoder layer, embeddings of word + position + token
type, the masked-LM head, padding, head ablation and its config. Equality with transformers: tests/core/checkpoint/
pretrained/test_bert.py."""
import json

import pytest
import torch

from core.checkpoint.folder import load_model, save_checkpoint, unique_state_dict
from core.model.encoder_only import EncoderOnly, EncoderOnlyConfig, special_sequence
from core.model.layers import EncoderLayer

TINY = dict(vocab_size=40, N=2, d_model=16, d_ff=32, h=4, dropout=0.0, max_len=24, pad_id=0, unk_id=1, cls_id=2,
            sep_id=3, mask_id=4)
ROBERTA = dict(TINY, type_vocab_size=1, pos_offset=2, pad_id=1, unk_id=3, cls_id=0, sep_id=2, pair_seps=2)
DISTILBERT = dict(TINY, type_vocab_size=0)


def model_of(seed: int = 0, **options) -> EncoderOnly:
    torch.manual_seed(seed)
    model = EncoderOnly(EncoderOnlyConfig(**{**TINY, **options})).eval()
    with torch.no_grad():     # larger than BERT's N(0, 0.02): peaked attention, so that a wrong mask or row shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * (0.5 if p.dim() > 1 else 0.1))
    return model


def texts(cfg: EncoderOnlyConfig, lengths=(7, 4, 2)) -> torch.Tensor:
    """A right-padded batch of [CLS] pieces [SEP], pieces drawn from ids 5.. (no special ones)."""
    g = torch.Generator().manual_seed(1)
    rows = [special_sequence(cfg, torch.randint(5, cfg.vocab_size, (n,), generator=g).tolist())[0] for n in lengths]
    width = max(map(len, rows))
    return torch.tensor([r + [cfg.pad_id] * (width - len(r)) for r in rows])


def test_the_layers_are_the_papers_post_norm_encoder_layers_with_gelu():
    model = model_of()
    assert len(model.encoder) == 2 and all(isinstance(layer, EncoderLayer) for layer in model.encoder)
    layer = model.encoder[0]
    assert not layer.res_attn.pre and not layer.res_ffn.pre
    assert layer.ffn.act is torch.nn.functional.gelu and layer.res_attn.norm.eps == 1e-12
    assert model.head.decoder.weight is model.embed.word.weight          # tied, as BERT's


@pytest.mark.parametrize("options", [TINY, ROBERTA, DISTILBERT], ids=["bert", "roberta", "distilbert"])
def test_shapes_and_probabilities(options):
    model = model_of(**options)
    tokens = texts(model.cfg)
    logits, attns = model(tokens, need_weights=True)
    B, T = tokens.shape
    assert logits.shape == (B, T, 40) and len(attns) == 2
    for a in attns:
        assert a.shape == (B, 4, T, T)
        torch.testing.assert_close(a.sum(-1), torch.ones(B, 4, T))
        pad = (tokens == model.cfg.pad_id)[:, None, None, :].expand_as(a)
        assert a[pad].abs().max() == 0                                   # nobody attends to padding
    assert torch.equal(model(tokens), logits)


@pytest.mark.parametrize("options", [TINY, ROBERTA, DISTILBERT], ids=["bert", "roberta", "distilbert"])
def test_a_text_in_a_padded_batch_has_the_maps_and_logits_it_has_alone(options):
    model = model_of(**options)
    batch = texts(model.cfg)
    logits, attns = model(batch, need_weights=True)
    for b in range(len(batch)):
        n = int((batch[b] != model.cfg.pad_id).sum())
        alone_logits, alone = model(batch[b: b + 1, :n], need_weights=True)
        torch.testing.assert_close(logits[b, :n], alone_logits[0], atol=1e-5, rtol=0)
        for layer in range(2):
            torch.testing.assert_close(attns[layer][b, :, :n, :n], alone[layer][0], atol=1e-6, rtol=0)


def test_positions_bert_counts_from_0_and_roberta_from_pad_id_plus_1_over_real_tokens():
    bert, roberta = model_of(), model_of(**ROBERTA)
    tokens = torch.tensor([[2, 7, 8, 3, 0, 0]])
    assert bert.embed.positions(tokens).tolist() == [[0, 1, 2, 3, 4, 5]]
    tokens = torch.tensor([[0, 7, 8, 2, 1, 1]])                         # RoBERTa: <s> a b </s> <pad> <pad>
    assert roberta.embed.positions(tokens).tolist() == [[2, 3, 4, 5, 1, 1]]
    assert roberta.embed.position.weight.shape[0] == 24 + 2              # max_len real positions after the offset


def test_the_embeddings_are_word_plus_type_plus_position_then_layer_norm():
    model = model_of()
    e = model.embed
    tokens, types = torch.tensor([[2, 9, 3, 11, 3]]), torch.tensor([[0, 0, 0, 1, 1]])
    expected = e.norm(e.word.weight[tokens[0]] + e.token_type.weight[types[0]] + e.position.weight[:5])
    torch.testing.assert_close(e(tokens, types)[0], expected)
    assert not torch.allclose(model(tokens, token_types=types), model(tokens))   # sentence B is told apart


def test_the_masked_lm_head_is_dense_gelu_layer_norm_then_the_tied_embedding_and_a_bias():
    model = model_of()
    hidden, _ = model.hidden(torch.tensor([[2, 4, 3]]))
    h = model.head
    expected = h.norm(torch.nn.functional.gelu(h.dense(hidden))) @ model.embed.word.weight.T + h.bias
    torch.testing.assert_close(model(torch.tensor([[2, 4, 3]])), expected)


def test_no_token_types_for_distilbert_and_a_clear_error_when_some_are_given():
    model = model_of(**DISTILBERT)
    assert model.embed.token_type is None
    with pytest.raises(ValueError, match="no token types"):
        model(torch.tensor([[2, 5, 3]]), token_types=torch.zeros(1, 3, dtype=torch.long))


def test_special_sequences_of_bert_and_roberta():
    bert, roberta = EncoderOnlyConfig(**TINY), EncoderOnlyConfig(**ROBERTA)
    assert special_sequence(bert, [7, 8], [9]) == ([2, 7, 8, 3, 9, 3], [0, 0, 0, 0, 1, 1])
    assert special_sequence(roberta, [7, 8], [9]) == ([0, 7, 8, 2, 2, 9, 2], [0] * 7)    # <s> A </s></s> B </s>
    assert special_sequence(bert, [7]) == ([2, 7, 3], [0, 0, 0])


def test_head_ablation_switches_one_head_off_for_one_call():
    model = model_of()
    tokens = texts(model.cfg)
    before = model(tokens)
    mask = model.ablate_heads([(1, 2)])
    assert mask.shape == (2, 4) and mask.sum() == 7 and mask[1, 2] == 0
    assert not torch.allclose(model(tokens, head_mask=mask), before)
    assert torch.equal(model(tokens, head_mask=torch.ones(2, 4)), before)
    assert torch.equal(model(tokens), before)                            # the model itself never changed
    with pytest.raises(ValueError, match="no head 2.0 .* 2 layers of 4 heads"):
        model.ablate_heads([(2, 0)])
    with pytest.raises(ValueError, match=r"shape \(4,\); this model needs \(2, 4\)"):
        model(tokens, head_mask=torch.ones(4))


def test_vectors_are_the_queries_and_keys_of_the_same_pass():
    model = model_of()
    tokens = texts(model.cfg)[:1]
    _, attns = model(tokens, need_vectors=True)
    probs, q, k = attns[0]
    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
    torch.testing.assert_close(scores.softmax(-1), probs)


def test_a_model_without_the_masked_lm_head_gives_its_attention_but_no_logits():
    model = model_of(mlm_head=False)
    assert model.head is None and "head.dense.weight" not in model.state_dict()
    hidden, attns = model.hidden(torch.tensor([[2, 5, 3]]), need_weights=True)
    assert hidden.shape == (1, 3, 16) and attns[0].shape == (1, 4, 3, 3)
    with pytest.raises(ValueError, match="no masked-LM head .* attention maps can be shown"):
        model(torch.tensor([[2, 5, 3]]))


def test_a_text_longer_than_the_positions_is_a_clear_error():
    with pytest.raises(ValueError, match="30 tokens is longer than this model reads .24 tokens"):
        model_of()(torch.full((1, 30), 5))


def test_config_round_trip_and_its_family():
    cfg = EncoderOnlyConfig(**ROBERTA)
    d = json.loads(cfg.to_json())
    assert d["family"] == "encoder-only" and EncoderOnlyConfig.from_dict(d) == cfg
    with pytest.raises(ValueError, match="family is not 'encoder-only'"):
        EncoderOnlyConfig.from_dict({**d, "family": "decoder-only"})
    with pytest.raises(ValueError, match="unknown config keys: \\['n_layers'\\]"):
        EncoderOnlyConfig.from_dict({**d, "n_layers": 3})
    with pytest.raises(ValueError, match="activation must be one of"):
        EncoderOnlyConfig(**{**TINY, "activation": "swish"})
    with pytest.raises(ValueError, match="mask_id .40. is not an id"):
        EncoderOnlyConfig(**{**TINY, "mask_id": 40})
    assert EncoderOnlyConfig(**TINY).head_activation == "gelu"


@pytest.mark.parametrize("options", [TINY, ROBERTA, dict(DISTILBERT, mlm_head=False)],
                         ids=["bert", "roberta", "headless"])
def test_the_one_loader_builds_it_from_its_folder(tmp_path, options):
    model = model_of(**options)
    state = unique_state_dict(model)
    assert ("head.decoder.weight" in state) is False                    # the tied matrix is stored once
    save_checkpoint(tmp_path, model, dtype=torch.float32)
    assert json.loads((tmp_path / "config.json").read_text())["family"] == "encoder-only"
    loaded = load_model(tmp_path)
    assert isinstance(loaded, EncoderOnly) and loaded.cfg == model.cfg
    tokens = texts(model.cfg)
    ours, theirs = (m.hidden(tokens, need_weights=True) for m in (model, loaded))
    torch.testing.assert_close(ours[0], theirs[0], atol=0, rtol=0)
    if model.head is not None:
        assert loaded.head.decoder.weight is loaded.embed.word.weight
