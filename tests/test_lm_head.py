"""The output head apart for bf16 products on a CPU (:mod:`dialeval.models.lm_head`): log-probabilities equal the
documented mix (a bf16 product, each row's largest logits and the scored tokens' own exact) to fp32 rounding and
stay within the bound its rounding allows, a changed head is copied again, FULL's two causal routes take it and
keep the NLLs of the model's own fp32 head to that bound, and every other model keeps its own head."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dialeval.full import hosted, tree
from dialeval.full.scorer import FollowupScorer
from dialeval.full.texts import FOLLOW_UPS
from dialeval.models import lm_head
from dialeval.models.lm import load_lm
from dialeval.testing.blenderbot import build_tiny_causal_lm

FP32_ROUNDOFF = 2.0 ** -24
EXACT_TOP = 16  #: the logits per row the route recomputes in fp32 (its documented count)
HISTORIES = [["Hello , how are you today ?", "I am fine , thank you ."], ["Do you like music ?"],
             ["Hello , how are you today ?", "Not great ."], ["Where are you from ?", "Beijing ."]]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm_head")
    return {arch: str(build_tiny_causal_lm(root / arch, arch=arch)) for arch in ("llama", "gpt2")}


def _exact_log_softmax(hidden: torch.Tensor, weight: torch.Tensor) -> np.ndarray:
    logits = hidden.double().numpy() @ weight.detach().double().numpy().T
    top = logits.max(axis=1, keepdims=True)
    return logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))


def _bound(hidden: torch.Tensor, weight: torch.Tensor) -> np.ndarray:
    """Per row: Σ_{v outside the top} p_v |l̃_v − l_v| (the normaliser's first-order error, with l̃ the bf16
    product and the top the EXACT_TOP largest l̃), plus fp32 rounding of the exact terms and a second-order margin."""
    exact = hidden.double().numpy() @ weight.detach().double().numpy().T
    approx = torch.nn.functional.linear(hidden.to(torch.bfloat16), weight.detach().to(torch.bfloat16)).double().numpy()
    p = np.exp(_exact_log_softmax(hidden, weight))
    outside = np.ones_like(p, dtype=bool)
    np.put_along_axis(outside, np.argsort(-approx, axis=1)[:, :EXACT_TOP], False, axis=1)
    first = (p * np.abs(approx - exact) * outside).sum(axis=1)
    scale = np.abs(hidden.double().numpy()) @ np.abs(weight.detach().double().numpy()).T
    return first + first ** 2 + 4 * hidden.shape[1] * FP32_ROUNDOFF * scale.max(axis=1)


def _hidden(weight: torch.Tensor, peak: float, n: int, gen: torch.Generator) -> torch.Tensor:
    """``n`` hidden states: Gaussian (``peak=0``), or aimed at a random token so that its logit is ``peak`` and the
    distribution peaks on it, as a fluent follow-up's tokens do."""
    w = weight.detach()
    noise = torch.randn(n, w.shape[1], generator=gen)
    if not peak:
        return 8 * noise
    live = torch.nonzero(w.norm(dim=1) > 0)[:, 0]  # a padding token's row may be zero
    aim = w[live[torch.randint(0, len(live), (n,), generator=gen)]]
    return peak * aim / aim.pow(2).sum(-1, keepdim=True) + 0.1 * noise / w.norm(dim=1).mean()


@pytest.mark.parametrize("peak", [0.0, 20.0])
def test_scored_log_probs_stay_within_the_rounding_bound_and_equal_the_documented_mix(tiny, peak):
    model = load_lm(tiny["llama"], device="cpu", dtype="bf16").model
    weight = lm_head.bf16_head_weight(model)
    gen = torch.Generator().manual_seed(1)
    hidden = _hidden(weight, peak, 150, gen)  # more rows than one CHUNK
    rows = torch.randint(0, 150, (400,), generator=gen)
    tokens = torch.randint(0, weight.shape[0], (400,), generator=gen)
    got = lm_head.scored_log_probs(model, hidden, rows, tokens).numpy()
    exact = _exact_log_softmax(hidden, weight)[rows.numpy(), tokens.numpy()]
    assert got.dtype == np.float64 and lm_head.EXACT_TOP == EXACT_TOP
    assert np.all(np.abs(got - exact) <= _bound(hidden, weight)[rows.numpy()])
    # the documented mix in float64: the bf16 product's logits, its EXACT_TOP largest per row exact
    logits = hidden.double().numpy() @ weight.detach().double().numpy().T
    approx = torch.nn.functional.linear(hidden.to(torch.bfloat16), weight.detach().to(torch.bfloat16))
    top = approx.topk(EXACT_TOP, dim=-1).indices.numpy()
    mixed = approx.double().numpy()
    np.put_along_axis(mixed, top, np.take_along_axis(logits, top, axis=1), axis=1)
    peak_of = mixed.max(axis=1, keepdims=True)
    normaliser = (peak_of + np.log(np.exp(mixed - peak_of).sum(axis=1, keepdims=True)))[:, 0]
    documented = logits[rows.numpy(), tokens.numpy()] - normaliser[rows.numpy()]
    assert np.abs(got - documented).max() <= 1e-5  # fp32 rounding of the exact terms and of the sum
    if peak:  # peaked rows: the top holds nearly all the mass, and the bf16 product alone would be off by more
        p = np.exp(_exact_log_softmax(hidden, weight))
        assert np.take_along_axis(p, top, axis=1).sum(axis=1).min() > 0.9
        plain = approx.double().numpy()
        plain_normaliser = np.log(np.exp(plain - plain.max(1, keepdims=True)).sum(1)) + plain.max(1)
        assert np.abs(plain_normaliser - normaliser).max() > 10 * np.abs(got - exact).max()


def test_no_scored_token_gives_an_empty_result_and_a_changed_head_is_copied_again(tiny):
    model = load_lm(tiny["llama"], device="cpu", dtype="bf16").model
    weight = lm_head.bf16_head_weight(model)
    empty = torch.zeros(0, dtype=torch.long)
    assert lm_head.scored_log_probs(model, torch.ones(3, weight.shape[1]), empty, empty).shape == (0,)
    hidden, one = torch.ones(1, weight.shape[1]), torch.zeros(1, dtype=torch.long)
    before = lm_head.scored_log_probs(model, hidden, one, one)
    with torch.no_grad():
        weight.mul_(2.0)
    try:
        after = lm_head.scored_log_probs(model, hidden, one, one)
    finally:
        with torch.no_grad():
            weight.div_(2.0)
    doubled = _exact_log_softmax(hidden, 2 * weight)[0, 0]
    assert abs(before.item() - doubled) > 1e-3  # the change moves the answer, and the new head gives it
    assert abs(after.item() - doubled) <= _bound(hidden, 2 * weight)[0]


def test_a_decoder_run_alone_keeps_no_cast_input(tiny):
    model = load_lm(tiny["llama"], device="cpu", dtype="bf16").model
    casts = {id(m.cast): m.cast for m in model.modules() if hasattr(m, "cast")}
    with torch.no_grad():
        model.get_decoder()(torch.tensor([[1, 5, 9, 14]]))
    assert casts and all(c.last is None for c in casts.values())


def test_only_a_plain_head_beside_bf16_products_takes_this_route(tiny):
    assert lm_head.bf16_head_weight(load_lm(tiny["llama"], device="cpu", backend="torch").model) is None  # fp32
    assert lm_head.bf16_head_weight(load_lm(tiny["gpt2"], device="cpu", dtype="bf16").model) is None  # not listed
    fp32 = load_lm(tiny["llama"], device="cpu", backend="torch").model
    with pytest.raises(ValueError, match="no plain output head"):
        lm_head.scored_log_probs(fp32, torch.zeros(1, 8), torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=torch.long))


@pytest.mark.parametrize("route", ["tree", "hosted"])
def test_full_scores_bf16_follow_ups_through_the_head_apart(tiny, route, monkeypatch):
    lm = load_lm(tiny["llama"], device="cpu", dtype="bf16")
    calls = []
    spy = lambda *a: calls.append(1) or lm_head.scored_log_probs(*a)  # noqa: E731
    monkeypatch.setattr(tree if route == "tree" else hosted, "scored_log_probs", spy)
    scorer = FollowupScorer(lm)
    got = scorer.score(HISTORIES, FOLLOW_UPS, progress=False, tree=route == "tree")
    assert calls  # the route ran the head apart
    weight = lm.model.get_output_embeddings().weight
    for i, history in enumerate(HISTORIES):
        ids = scorer.encode_history(history, scorer.max_length)
        for k, f in enumerate(scorer.encode_follow_ups(FOLLOW_UPS)):
            with torch.no_grad():  # the model's own fp32 head over its hidden states: the reference
                hidden = lm.model.get_decoder()(torch.tensor([ids + f])).last_hidden_state[0]
            at = torch.arange(len(ids) - 1, len(ids) - 1 + len(f))
            exact = _exact_log_softmax(hidden[at], weight)[np.arange(len(f)), f]
            tolerance = _bound(hidden[at], weight).max() + 1e-5  # the head's bound, and the routes' own rounding
            assert abs(got[i, k] + exact.mean()) <= tolerance, (route, i, k)
