"""FULL's cached route (shared-context prefixes, nested histories, packed follow-up tries; the token-tree default is
``tests/test_token_tree.py``): the grouping by hand, and the scores of several responses to one context equal to
a plain loop (one forward pass per history + follow-up, no cache), on torch and ONNX Runtime, under every query
budget."""

from __future__ import annotations

import pytest
import torch

from dialeval.full import hosted
from dialeval.full import scorer as full_scorer
from dialeval.full.hosted import followup_trie, query_chunks
from dialeval.full.scorer import FollowupScorer
from dialeval.full.texts import FOLLOW_UPS, mean_token_nll
from dialeval.models.lm import load_lm
from dialeval.models.runtime import greedy_batches, length_sorted_batches
from dialeval.models.shared_prefix import (
    common_prefix_length,
    nested_hosts,
    pack_cost,
    pack_groups,
    prefix_groups,
)
from dialeval.testing.blenderbot import build_tiny_causal_lm

CONTEXT = ["Hello , how are you today ?", "I am fine , thank you . And you ?", "Do you like music ?"]
HISTORIES = [
    [*CONTEXT, "Yes , I love jazz ."],
    [*CONTEXT, "No ."],
    [*CONTEXT, "Yes , I love jazz ."],  # a repeated item: its shared part stops one token short
    ["Where are you from ? I have wondered about it for a while .", "I am from Beijing ."],
    [*CONTEXT, "Sometimes , when I am driving to work in the morning and the roads are quiet ."],
    ["Hi"],
    ["Where are you from ? I have wondered about it for a while .", "Shanghai , near the river ."],
    # every turn of one conversation: each history but its trailing separator begins the next one
    CONTEXT[:1],
    CONTEXT[:2],
    CONTEXT,
    CONTEXT[:2],
]


def test_common_prefix_and_groups_by_hand():
    assert common_prefix_length([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_prefix_length([[5], [6]]) == 0
    items = [[1] * 10 + [2], [1] * 10 + [3, 4], [1] * 10 + [2], [7, 8], [1] * 3 + [9], [1] * 3]
    keys = ["a", "a", "a", None, "b", "b"]
    groups, singles = prefix_groups(items, keys)
    # "a": 10 shared tokens (the repeated item keeps its last token); "b" shares 3 < 8 tokens: no group
    assert groups == [(10, [0, 1, 2])] and singles == [3, 4, 5]
    # "b" with a lower bar: 3 common tokens, but the shorter member keeps one of its own, so 2 are shared
    assert prefix_groups(items, keys, min_shared=2) == ([(10, [0, 1, 2]), (2, [4, 5])], [3])


def test_pack_groups_splits_and_orders():
    packs = pack_groups([(4, [0, 1, 2]), (9, [3, 4]), (6, [5, 6, 7, 8, 9])], rows_per_pack=3)
    assert packs == [[(9, [3, 4])], [(6, [5, 6, 7])], [(6, [8, 9])], [(4, [0, 1, 2])]]
    assert sorted(i for p in packs for _, m in p for i in m) == list(range(10))


GROUPS = [(4, [0, 1, 2]), (9, [3, 4]), (6, [5, 6, 7, 8, 9])]
LENGTHS = [6, 7, 10, 12, 11, 8, 9, 8, 20, 7]  # own tokens (length − shared): 2 3 6 | 3 2 | 2 3 2 14 1


def test_pack_groups_token_budget_by_hand():
    # a pack holds members × (longest shared + longest own) tokens. Budget 60: [5..9] splits before 8
    # (4·(6 + 14) > 60); [3,4] + [5,6,7] hold 5·(9 + 3) = 60; adding [8,9] 7·(9 + 14); [8,9] + [0,1,2] 5·(6 + 14)
    assert pack_groups(GROUPS, 8, max_tokens=60, lengths=LENGTHS) == [
        [(9, [3, 4]), (6, [5, 6, 7])], [(6, [8, 9])], [(4, [0, 1, 2])]]
    # budget 40: [3,4] + [5,6,7] (60) no longer fit together; [8,9] hold exactly 2·(6 + 14) = 40
    assert pack_groups(GROUPS, 8, max_tokens=40, lengths=LENGTHS) == [
        [(9, [3, 4])], [(6, [5, 6, 7])], [(6, [8, 9])], [(4, [0, 1, 2])]]
    unbounded = [[(9, [3, 4]), (6, [5, 6, 7, 8, 9])], [(4, [0, 1, 2])]]
    assert pack_groups(GROUPS, 8) == unbounded == pack_groups(GROUPS, 8, max_tokens=None, lengths=LENGTHS)
    assert pack_groups(GROUPS, 8, max_tokens=10_000, lengths=LENGTHS) == unbounded


def test_one_greedy_batcher_serves_batches_and_packs():
    # rows bound: 2 + 2 > 3; cost bound: Σ > 10; an item alone over the bound still runs
    assert greedy_batches([2, 2, 1, 12, 3], sum, 10, max_rows=3, rows=lambda x: x) == [[2], [2, 1], [12], [3]]
    assert greedy_batches([4, 4, 4], sum, 10) == [[4, 4], [4]] and greedy_batches([], sum, 1) == []
    # length_sorted_batches: longest first, at most 2 rows, rows × longest ≤ 16: 9 alone (2 × 9 > 16), then 8 with 5 (2 × 8)
    assert length_sorted_batches([3, 9, 8, 5, 5], 2, max_tokens=16) == [[1], [2, 3], [4, 0]]
    assert length_sorted_batches([3, 9, 8, 5, 5], 2) == [[1, 2], [3, 4], [0]]


def test_least_padding_cuts_keep_one_long_history_from_padding_the_short_ones():
    # one 100-token history and three of 10, a call costing 64 padded tokens: one batch is 4 × 100 + 64 = 464;
    # [100] then [10, 10, 10] is 100 + 64 + 3 × 10 + 64 = 258, the least
    assert length_sorted_batches([10, 100, 10, 10], 4, call_cost=64) == [[1], [0, 2, 3]]
    # calls dearer than the padding: one batch (4 × 100 + 1000 < 100 + 30 + 2000)
    assert length_sorted_batches([10, 100, 10, 10], 4, call_cost=1000) == [[1, 0, 2, 3]]
    # the row and token bounds still hold: rows ≤ 2; rows × longest ≤ 30 (the 100 alone, then the three 10s)
    assert length_sorted_batches([10, 100, 10, 10], 2, call_cost=1000) == [[1, 0], [2, 3]]
    assert length_sorted_batches([10, 100, 10, 10], 4, max_tokens=30, call_cost=1000) == [[1], [0, 2, 3]]


def test_least_padding_cuts_equal_the_best_of_every_partition():
    import itertools
    import random

    rng = random.Random(7)
    for _ in range(40):
        lengths = [rng.randint(1, 120) for _ in range(rng.randint(1, 8))]
        rows, budget, call = rng.randint(1, 4), rng.choice([None, 150, 300]), rng.choice([0, 16, 64, 500])
        order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))

        def fits(batch, rows=rows, budget=budget, lengths=lengths):
            return len(batch) <= rows and (budget is None or len(batch) == 1 or len(batch) * lengths[batch[0]] <= budget)

        best = float("inf")  # every way to cut the longest-first order, by brute force
        for cuts in itertools.product([False, True], repeat=len(order) - 1):
            batches, current = [], [order[0]]
            for item, cut in zip(order[1:], cuts):
                if cut:
                    batches.append(current)
                    current = []
                current.append(item)
            batches.append(current)
            if all(fits(b) for b in batches):
                best = min(best, sum(len(b) * lengths[b[0]] + call for b in batches))
        got = length_sorted_batches(lengths, rows, max_tokens=budget, call_cost=call)
        assert sorted(i for b in got for i in b) == list(range(len(lengths))) and all(fits(b) for b in got)
        assert sum(len(b) * lengths[b[0]] + call for b in got) == best, (lengths, rows, budget, call)


def test_pack_groups_oversize_member_runs_alone():
    # member 0 alone holds 5 + 95 > 20 tokens: it runs alone, never dropped; member 1 holds 5 + 2
    assert pack_groups([(5, [0, 1])], 8, max_tokens=20, lengths=[100, 7]) == [[(5, [0])], [(5, [1])]]


def test_pack_groups_budget_keeps_every_member_once():
    for rows, budget in [(1, 1), (3, 1), (3, 25), (8, 40), (8, 60), (2, 10_000)]:
        packs = pack_groups(GROUPS, rows, max_tokens=budget, lengths=LENGTHS)
        assert sorted(i for p in packs for _, m in p for i in m) == list(range(10)), (rows, budget)
        for p in packs:
            assert sum(len(m) for _, m in p) <= rows
            assert pack_cost(p, LENGTHS) <= budget or p == [(p[0][0], p[0][1][:1])], (rows, budget, p)


def test_nested_hosts_by_hand():
    items = [[1, 2, 9], [1, 2, 3, 4], [1, 2, 3, 4, 5, 6], [7, 8], [1, 2, 3, 4], [1, 2, 3, 7], [5], [5]]
    hosts = nested_hosts(items)
    # [1,2,9] needs [1,2]: the longest run [1,2,3,4,5,6] holds it; so does it hold [1,2,3,4] (twice) and
    # [1,2,3,7] (needs [1,2,3]); [7,8] stands alone, and holds both [5]: a one-token item needs no shared tokens
    assert hosts == [2, 2, 2, 3, 2, 2, 3, 3]
    for item, host in zip(items, hosts):
        assert items[host][: len(item) - 1] == item[:-1]
    assert nested_hosts([[3, 4], [3, 5, 6]]) == [1, 1] and nested_hosts([[3, 4, 4], [3, 5, 6]]) == [0, 1]


def test_followup_trie_by_hand():
    trie = followup_trie([[10, 11, 12], [10, 11, 13, 14], [20], [10, 15]])
    # inputs 10,11 | 10,11,13 | – | 10: nodes 10 (depth 0), 11 (1), 13 (2)
    assert trie["token"].tolist() == [10, 11, 13] and trie["depth"].tolist() == [0, 1, 2]
    assert trie["sees"].tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    # every scored token: the node predicting it (-1: the anchor), its id, its follow-up
    assert trie["node"].tolist() == [-1, 0, 1, -1, 0, 1, 2, -1, -1, 0]
    assert trie["target"].tolist() == [10, 11, 12, 10, 11, 13, 14, 20, 10, 15]
    assert trie["follow_up"].tolist() == [0, 0, 0, 1, 1, 1, 1, 2, 3, 3]
    assert query_chunks([3, 1, 2, 1], block=4, budget=12) == [[0], [2], [1, 3]]
    assert query_chunks([1, 2], block=4, budget=64) == [[0, 1]]  # rows stay in order: the cache as it is


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("shared") / "llama", arch="llama"))


def _plain_nll(lm, history_ids: list[int], f_ids: list[int]) -> float:
    """One forward pass of history + follow-up, batch 1, no cache."""
    with torch.no_grad():
        logp = torch.log_softmax(lm.model(torch.tensor([history_ids + f_ids])).logits[0].float(), -1)
    n = len(history_ids)
    return mean_token_nll([logp[n - 1 + t, tok].item() for t, tok in enumerate(f_ids)])


@pytest.mark.parametrize("backend", ["torch", pytest.param("onnx", marks=pytest.mark.onnx)])
def test_shared_and_packed_equal_the_plain_loop(tiny_path, backend, monkeypatch):
    lm = load_lm(tiny_path, device="cpu", backend=backend)
    reference = load_lm(tiny_path, device="cpu", backend="torch")
    scorer = FollowupScorer(lm)
    f_ids = scorer.encode_follow_ups(FOLLOW_UPS)
    items = [scorer.encode_history(h, scorer.max_length) for h in HISTORIES]
    groups, _ = prefix_groups(items, [tuple(h[:-1]) for h in HISTORIES])
    assert sorted(m for _, members in groups for m in members) == [0, 1, 2, 3, 4, 6, 8, 10]  # three shared contexts
    hosts = nested_hosts(items)
    assert len(set(hosts)) < len(items) - 1  # the conversation's turns (and the repeated item) run inside others
    expected = [[_plain_nll(reference, ids, f) for f in f_ids] for ids in items]
    # budget 90: a few guests per pass, cache rows copied; 30: one guest per pass, a host split over passes;
    # batch size 1: one host alone, its guests over several passes
    for budget, batch in [(512, 2), (90, 2), (30, 2), (30, 1)]:
        monkeypatch.setattr(hosted, "QUERY_BUDGET", budget)
        got = scorer.score(HISTORIES, FOLLOW_UPS, batch_size=batch, progress=False, tree=False)
        for i in range(len(items)):
            for k in range(len(f_ids)):
                assert got[i, k] == pytest.approx(expected[i][k], abs=2e-5), (budget, batch, i, k)


def test_a_token_budget_regroups_packs_and_keeps_the_nlls(tiny_path, monkeypatch):
    scorer = FollowupScorer(load_lm(tiny_path, device="cpu", backend="torch"))
    free = scorer.score(HISTORIES, FOLLOW_UPS, progress=False, tree=False)
    passes = []
    original = full_scorer.shared_history_pass
    monkeypatch.setattr(full_scorer, "shared_history_pass", lambda lm, pack, *a: passes.append(pack)
                        or original(lm, pack, *a))
    capped = scorer.score(HISTORIES, FOLLOW_UPS, progress=False, max_tokens=40, tree=False)
    assert len(passes) > 2  # without a budget, one pack holds every shared context
    assert capped == pytest.approx(free, abs=1e-6)  # regrouped rows: float rounding only
