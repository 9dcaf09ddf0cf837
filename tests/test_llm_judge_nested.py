"""The LLM judge's prompts that share a long token prefix although their contexts differ (turn k's context
lines begin turn k + 2's): the host choice and the guests' layout by hand, a token budget on the guests'
passes, and the nested route against scoring every prompt from scratch, on a tiny LM and on real ConTurE rows
with the offline SmolLM2 (ONNX Runtime and torch)."""

from __future__ import annotations

import numpy as np
import pytest
from tolerances import SMOLLM2_RTOL

from dialeval.datasets import DATA_FOLDERS
from dialeval.judge import scorer as judge_scorer
from dialeval.judge.scorer import JudgeScorer, guest_layout
from dialeval.meta.evaluation import load_rows, score_rows
from dialeval.models.shared_prefix import prefix_hosts
from dialeval.testing.blenderbot import build_tiny_causal_lm


def test_hosts_by_hand():
    head = list(range(1, 21))
    items = [head + [50, 51],                  # 0: shares 20 tokens with 1, 2 of its own: a guest of 1
             head + list(range(60, 70)),       # 1: the longest, a host
             head[:10] + list(range(80, 95)),  # 2: shares 10 with 1, 15 of its own: not worth it, a host
             head[:10] + [80, 81, 99],         # 3: shares 12 with 2, 1 of its own: a guest of 2
             head + [50, 51],                  # 4: 0's twin; 0 is a guest, so 4 is 1's guest too
             head[:7] + [200],                 # 5: 7 shared tokens < MIN_SHARED = 8: a host
             head + [60, 61]]                  # 6: all of it begins 1, but its last token stays its own: 21 shared
    host, shared = prefix_hosts(items)
    assert host == [1, 1, 2, 2, 1, 5, 1]
    assert shared == [20, 0, 0, 12, 20, 0, 21]


def test_guest_layout_by_hand():
    # a 2-token prefix, then 4 item columns: host 0 has 4 tokens, host 1 has 2 (two columns of left padding)
    host_mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 1, 1]])
    # guest a on host 1, sharing its first token (the row's first 3 item columns), own tokens 7 8;
    # guest b on host 0, sharing its first 3 tokens, own token 9
    lay = guest_layout(host_mask, 2, rows=[1, 0], seen=[3, 3], shared=[1, 3], suffixes=[[7, 8], [9]], pad=0)
    assert lay["ids"].tolist() == [[7, 8], [0, 9]]
    assert lay["mask"].tolist() == [[1, 1, 0, 0, 1, 0, 1, 1], [1, 1, 1, 1, 1, 0, 0, 1]]
    assert lay["positions"].tolist() == [[3, 4], [5, 5]]  # 2 + 1 + (0, 1); 2 + 3 + 0 (the padding clamped)


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("judge_nested"), seed=5))


@pytest.mark.parametrize("backend", ["torch", pytest.param("onnx", marks=pytest.mark.onnx)])
def test_guest_passes_stay_within_max_tokens(tiny_lm, backend, monkeypatch, cached_routes):
    # a 20-token rubric prefix; host H (60 tokens) and three guests with other keys sharing its first 40, 50, 30
    # tokens, with 5, 3, 6 of their own; one item sharing nothing
    from dialeval.models.lm import load_lm

    lm = load_lm(tiny_lm, backend=backend)
    prefix, h = list(range(10, 30)), list(range(100, 160))
    items = [h, h[:40] + [40] * 5, h[:50] + [41] * 3, h[:30] + [42] * 6, list(range(300, 320))]
    keys = [0, 1, 2, 3, 4]
    passes = []
    original = judge_scorer.guest_layout

    def recording(host_mask, n_prefix, rows, seen, shared, suffixes, pad):
        lay = original(host_mask, n_prefix, rows, seen, shared, suffixes, pad)
        passes.append((lay["mask"].shape[0], lay["mask"].shape[1] - n_prefix, sorted(len(s) for s in suffixes)))
        return lay

    monkeypatch.setattr(judge_scorer, "guest_layout", recording)
    judge = JudgeScorer(lm)
    capped = judge.score(prefix, items, [5, 6, 7, 8, 9], max_tokens=140, keys=keys, progress=False)
    # rows × (host width 60 + longest own) ≤ 140: 66 + 65 (two rows, 132) | 63; one pass of three is 198
    assert passes == [(2, 66, [5, 6]), (1, 63, [3])]
    passes.clear()
    free = judge.score(prefix, items, [5, 6, 7, 8, 9], max_tokens=None, keys=keys, progress=False)
    assert passes == [(3, 66, [3, 5, 6])]
    reference = judge.score(prefix, items, [5, 6, 7, 8, 9], share_prefix=False, keys=keys, progress=False)
    np.testing.assert_allclose(capped[0], reference[0], rtol=1e-5)
    np.testing.assert_allclose(free[0], reference[0], rtol=1e-5)
    np.testing.assert_allclose(free[2], reference[2], rtol=1e-5)


@pytest.mark.parametrize("backend", [pytest.param("onnx", marks=pytest.mark.onnx), "torch"])
def test_conture_turns_nested_equal_from_scratch(shared_data, backend, monkeypatch, cached_routes):
    """The first conversation of ConTurE: every turn rated after its context, the contexts of one parity nested;
    the default route (nested guests on the longest turn's cache) equals every prompt from scratch."""
    rows = load_rows("conture", "turn", data_dir=shared_data / DATA_FOLDERS["conture"])[:6]
    hosted = []
    original = JudgeScorer._guests
    monkeypatch.setattr(JudgeScorer, "_guests", lambda self, cache, mask, n, members, items: hosted.extend(
        g for _, g, _, _ in members) or original(self, cache, mask, n, members, items))
    nested = score_rows("llm_judge", "conture", "turn", rows, {"backend": backend}, round_decimals=None)["scores"]
    assert len(hosted) >= 3  # turns 3, 4 and 5 ran on turn 6's cache
    scratch = score_rows("llm_judge", "conture", "turn", rows, {"backend": backend, "share_prefix": False},
                         round_decimals=None)["scores"]
    # other row lengths, other summation orders: SmolLM2's derived fp32 tolerance (tests/tolerances.py)
    np.testing.assert_allclose(nested, scratch, rtol=SMOLLM2_RTOL)
