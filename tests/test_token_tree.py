"""The default causal route of FULL and the LLM judge, token trees: the packing and the mask by hand; every
follow-up's NLL equal to a plain loop (one forward pass per history + follow-up, no cache) and every rating equal
to each prompt run from scratch, on torch and ONNX Runtime, whatever the row budget; ``max_tokens`` bounds every
row; real ConTurE turns with the offline SmolLM2."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from test_full_shared import HISTORIES, _plain_nll
from tolerances import SMOLLM2_RTOL, TINY_LM_RTOL

from dialeval.datasets import DATA_FOLDERS
from dialeval.full import tree as full_tree
from dialeval.full.scorer import FollowupScorer
from dialeval.full.texts import FOLLOW_UPS
from dialeval.full.tree import tree_route_applies
from dialeval.judge import scorer as judge_scorer
from dialeval.judge.scorer import JudgeScorer
from dialeval.meta.evaluation import load_rows, score_rows
from dialeval.models.lm import load_lm, tree_route_fits
from dialeval.models.token_tree import SHARED_TOKENS, ancestor_mask, tree_passes, tree_rows
from dialeval.testing.blenderbot import build_tiny_causal_lm

TAIL = {"tail_parents": [-1, 0, -1], "tail_depths": [0, 1, 0], "tail_tokens": [90, 91, 92]}  # 90 → 91; 92


def test_tree_rows_share_prefixes_by_hand():
    seqs = [[1, 2, 3], [1, 2, 4, 5], [7], [1, 2, 3]]
    row, alone = tree_rows(seqs, **TAIL, min_shared=0)
    # sorted: [1,2,3] (twice), [1,2,4,5], [7]; each distinct sequence, then its tail after its last token; [7]
    # shares nothing, so it runs in a row of its own
    assert row.tokens == [1, 2, 3, 90, 91, 92, 4, 5, 90, 91, 92] and alone.tokens == [7, 90, 91, 92]
    assert row.parents == [-1, 0, 1, 2, 3, 2, 1, 6, 7, 8, 7] and alone.parents == [-1, 0, 1, 0]
    assert row.positions == [0, 1, 2, 3, 4, 3, 2, 3, 4, 5, 4] and alone.positions == [0, 1, 2, 1]
    # (sequence, its last token's node, its tail's first node): the repeated sequence shares end and tail
    assert row.ends == [(0, 2, 3), (3, 2, 3), (1, 7, 8)] and alone.ends == [(2, 0, 1)]


def test_tree_rows_close_on_every_bound():
    seqs = [[1, 2, 3], [1, 2, 4, 5], [7], [1, 2, 3]]
    # sharing fewer than SHARED_TOKENS: a row each (the repeat shares its twin's row, end and tail)
    assert [[i for i, _, _ in r.ends] for r in tree_rows(seqs, **TAIL)] == [[0, 3], [1], [2]]
    assert [[i for i, _, _ in r.ends] for r in tree_rows(seqs, **TAIL, max_ends=1)] == [[0], [3], [1], [2]]
    # a shared context keeps sequences in one row, up to row_limit tokens
    context = list(range(100, 100 + SHARED_TOKENS))
    long = [context + [1], context + [2], context + [3]]
    (row,) = tree_rows(long, **TAIL)
    assert len(row.tokens) == SHARED_TOKENS + 3 * (1 + 3)
    assert [len(r.ends) for r in tree_rows(long, **TAIL, row_limit=SHARED_TOKENS + 8)] == [2, 1]
    assert [len(r.ends) for r in tree_rows([c[1:] for c in long], **TAIL)] == [1, 1, 1]  # one token short


def test_tree_passes_by_hand():
    # widest first (50 40 30 20), cut where padded tokens plus the calls' cost are least
    assert tree_passes([30, 50, 20, 40], [4] * 4, batch_size=4) == [[1], [3], [0], [2]]  # calls cost nothing
    assert tree_passes([30, 50, 20, 40], [4] * 4, batch_size=2, call_cost=1000) == [[1, 3], [0, 2]]  # 2 rows a pass
    # 90 padded tokens a pass: 2 × 50 > 90, so 50 alone, then both 40s (80)
    assert tree_passes([50, 40, 40], [4] * 3, batch_size=4, max_tokens=90, call_cost=1000) == [[0], [1, 2]]
    # one pass by cost, split where it would score more than 8 nodes
    assert tree_passes([30, 50, 20, 40], [4] * 4, batch_size=4, max_scored=8, call_cost=1000) == [[1, 3], [0, 2]]
    assert tree_passes([300], [900], batch_size=4, max_tokens=10) == [[0]]  # over every budget: alone


def test_rows_that_share_nothing_run_as_trees_on_torch(tiny_path, monkeypatch):
    """Histories that share no tokens: on torch FULL still runs them as token trees (one pass a batch, not the
    cached route's two), equal to the cached route; the judge's items run on its prefix cache. On ONNX Runtime FULL
    leaves them to the cached route, which runs them on the exported graphs."""
    histories = [["Hello , how are you today ?"], ["Where are you from ?", "Beijing ."], ["Do you like music ?"]]
    lm = load_lm(tiny_path, device="cpu", backend="torch")
    calls = {"full": 0, "judge": 0}
    original = full_tree.tree_logits

    def counted(*a, **k):
        calls["full"] += 1
        return original(*a, **k)

    monkeypatch.setattr(full_tree, "tree_logits", counted)
    monkeypatch.setattr(judge_scorer, "tree_logits", lambda *a: calls.update(judge=calls["judge"] + 1))
    scorer = FollowupScorer(lm)
    expected = scorer.score(histories, FOLLOW_UPS, progress=False, tree=False)
    assert calls["full"] == 0
    np.testing.assert_allclose(scorer.score(histories, FOLLOW_UPS, progress=False), expected, rtol=TINY_LM_RTOL)
    assert calls["full"] == 1  # three short histories, one pass
    items = [list(range(100, 140)), list(range(200, 230)), list(range(300, 310))]
    judge = JudgeScorer(lm)
    want = judge.score(list(range(10, 30)), items, [5, 6, 7, 8, 9], tree=False, progress=False)
    np.testing.assert_allclose(judge.score(list(range(10, 30)), items, [5, 6, 7, 8, 9], progress=False)[0], want[0],
                               rtol=1e-6)
    assert calls["judge"] == 0


@pytest.mark.onnx
def test_onnx_leaves_histories_that_share_nothing_to_the_cached_route(tiny_path, monkeypatch):
    histories = [["Hello , how are you today ?"], ["Where are you from ?", "Beijing ."], ["Do you like music ?"]]
    lm = load_lm(tiny_path, device="cpu", backend="onnx")
    called = []
    monkeypatch.setattr(full_tree, "tree_logits", lambda *a, **k: called.append(a))
    scorer = FollowupScorer(lm)
    np.testing.assert_allclose(scorer.score(histories, FOLLOW_UPS, progress=False),
                               scorer.score(histories, FOLLOW_UPS, progress=False, tree=False), rtol=0)
    assert not called


def test_ancestor_mask_by_hand():
    sees = ancestor_mask([-1, 0, 1, 0, -1], 6)
    assert sees.astype(int).tolist() == [[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0],
                                         [1, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1]]


def test_the_tree_route_is_not_taken_where_it_would_change_what_runs():
    items, f_ids = [[1, 2, 3]], [[4, 5]]

    def lm(backend, window=None):
        return SimpleNamespace(backend=backend, model=SimpleNamespace(config=SimpleNamespace(sliding_window=window)))

    assert tree_route_applies(lm("torch"), items, f_ids) and tree_route_applies(lm("onnx"), items, f_ids)
    assert not tree_route_applies(lm("onnx-int8"), items, f_ids)  # int8 graphs stay on ONNX Runtime
    assert tree_route_applies(lm("torch", window=5), items, f_ids)
    assert not tree_route_applies(lm("torch", window=4), items, f_ids)  # 3 + 2 tokens reach past the window
    assert not tree_route_applies(lm("torch"), [[1], []], f_ids)  # an empty history has no token to hang under
    assert not tree_route_applies(lm("torch"), items, [])
    # the judge: a 2-token rubric prefix before items of up to 3 tokens reaches 5 positions
    assert tree_route_fits(lm("torch", window=5), [[1, 2], [3, 4, 5]], extra=2)
    assert not tree_route_fits(lm("torch", window=4), [[1, 2], [3, 4, 5]], extra=2)
    assert not tree_route_fits(lm("torch"), []) and not tree_route_fits(lm("torch"), [[]])


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def tiny_path(request, tmp_path_factory):
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("tree") / request.param, arch=request.param))


@pytest.mark.parametrize("backend", ["torch", pytest.param("onnx", marks=pytest.mark.onnx)])
def test_tree_rows_equal_the_plain_loop_under_every_budget(tiny_path, backend, monkeypatch):
    lm = load_lm(tiny_path, device="cpu", backend=backend)
    reference = load_lm(tiny_path, device="cpu", backend="torch")
    scorer = FollowupScorer(lm)
    f_ids = scorer.encode_follow_ups(FOLLOW_UPS)
    items = [scorer.encode_history(h, scorer.max_length) for h in HISTORIES]
    expected = np.asarray([[_plain_nll(reference, ids, f) for f in f_ids] for ids in items])
    trie_nodes = len({tuple(f[:t + 1]) for f in f_ids for t in range(len(f) - 1)})
    alone = max(len(h) for h in items) + trie_nodes  # the longest history and its follow-ups
    passes: list[list[list[int]]] = []  # each pass: its rows' tokens
    original = full_tree.tree_logits
    monkeypatch.setattr(full_tree, "tree_logits", lambda lm, rows, keeps, device: passes.append(
        [r.tokens for r in rows]) or original(lm, rows, keeps, device))
    for max_tokens, batch_size in ((None, 16), (200, 16), (60, 2), (1, 16)):
        passes.clear()
        got = scorer.score(HISTORIES, FOLLOW_UPS, max_tokens=max_tokens, batch_size=batch_size, progress=False)
        assert passes, "the tree route ran"
        # other row shapes sum in another order: the tiny LM's derived fp32 tolerance (tests/tolerances.py)
        np.testing.assert_allclose(got, expected, rtol=TINY_LM_RTOL, err_msg=str(max_tokens))
        # rows × widest within the budget, unless one history and its follow-ups alone exceed it
        assert all(len(p) <= batch_size for p in passes)
        assert all(len(p) * max(map(len, p)) <= max(max_tokens or 4096, alone) for p in passes), max_tokens
        if max_tokens == 1:  # one distinct history a row, a row a pass
            assert [len(p) for p in passes] == [1] * len({tuple(h) for h in items})
    # the shared contexts and the nested turns run once: fewer tokens than the histories and tries one by one
    passes.clear()
    scorer.score(HISTORIES, FOLLOW_UPS, progress=False)
    assert sum(len(t) for p in passes for t in p) < sum(len(h) + trie_nodes for h in items) - 40


@pytest.mark.parametrize("backend", ["torch", pytest.param("onnx", marks=pytest.mark.onnx)])
def test_judge_tree_rows_equal_every_prompt_from_scratch(tiny_path, backend, monkeypatch):
    # a 20-token rubric prefix; context A (40 tokens) with 3 responses, B nested in A's first 30 tokens, a repeat,
    # and one item sharing nothing
    lm = load_lm(tiny_path, device="cpu", backend=backend)
    prefix, a = list(range(10, 30)), list(range(100, 140))
    items = [a + [50, 51], a + [52], a + [53] * 6, a[:30] + [60] * 4, a + [52], list(range(200, 215))]
    judge = JudgeScorer(lm)
    reference = judge.score(prefix, items, [5, 6, 7, 8, 9], share_prefix=False, progress=False)
    passes: list[list[list[int]]] = []
    original = judge_scorer.tree_logits
    monkeypatch.setattr(judge_scorer, "tree_logits", lambda lm, rows, keeps, device, past: passes.append(
        [r.tokens for r in rows]) or original(lm, rows, keeps, device, past))
    for max_tokens in (None, 60, 1):
        passes.clear()
        got = judge.score(prefix, items, [5, 6, 7, 8, 9], max_tokens=max_tokens, progress=False)
        for value, want in zip(got, reference):
            np.testing.assert_allclose(value, want, rtol=TINY_LM_RTOL)
        # 46: the longest item, alone in its row
        assert all(len(p) * max(map(len, p)) <= max(max_tokens or 4096, 46) for p in passes), max_tokens
    assert [len(p) for p in passes] == [1] * 5  # one item a row, a row a pass: the repeat shares its twin's
    passes.clear()
    judge.score(prefix, items, [5, 6, 7, 8, 9], progress=False)
    # context A's items in one row, every distinct token once; the unrelated item in a row of its own
    assert [sorted(map(len, p)) for p in passes] == [[15, 40 + 2 + 1 + 6 + 4]]


def _plain_score(scorer: FollowupScorer, histories, follow_ups, **_) -> np.ndarray:
    """:meth:`FollowupScorer.score` as a plain loop: one forward pass per history + follow-up (:func:`_plain_nll`)."""
    f_ids = scorer.encode_follow_ups(follow_ups)
    budget = scorer.max_length - max(len(f) for f in f_ids)
    return np.array([[_plain_nll(scorer.lm, scorer.encode_history(h, budget), f) for f in f_ids] for h in histories])


def test_conture_turns_as_token_trees_equal_from_scratch(shared_data, monkeypatch):
    """The first conversation of ConTurE with the offline SmolLM2: every turn's context begins the next one's, so
    the judge's prompts and FULL's histories share most tokens; the tree route equals scoring each from scratch."""
    rows = load_rows("conture", "turn", data_dir=shared_data / DATA_FOLDERS["conture"])[:6]
    judged = score_rows("llm_judge", "conture", "turn", rows, {"backend": "onnx"}, round_decimals=None)["scores"]
    full = score_rows("full_followup", "conture", "turn", rows, {"backend": "onnx"}, round_decimals=None)["scores"]
    # from scratch: every judge prompt whole; every FULL history with each follow-up in one pass, no cache
    monkeypatch.setattr(FollowupScorer, "score", _plain_score)
    # the tree's rows and the prompts from scratch sum in other orders (other row lengths, other CPU kernels): the
    # tolerance of SmolLM2's depth, widest sum and vocabulary (tests/tolerances.py), about 1.7e-4
    np.testing.assert_allclose(judged, score_rows("llm_judge", "conture", "turn", rows, {"share_prefix": False},
                                                  round_decimals=None)["scores"], rtol=SMOLLM2_RTOL)
    np.testing.assert_allclose(full, score_rows("full_followup", "conture", "turn", rows,
                                                round_decimals=None)["scores"], rtol=SMOLLM2_RTOL)
