"""The compute floor of the whole leaderboard (benchmarks/leaderboard_floor.py): its token counts, by hand."""

from repo_scripts import load_script


def _floor():
    return load_script("benchmarks/leaderboard_floor.py")


def test_trie_counts_each_distinct_prefix_once():
    floor = _floor()
    # trie of 123, 124, 5 (and 123 repeated): nodes 1, 2, 3, 4, 5 at depths 0, 1, 2, 2, 0 → Σ(depth + 1) = 1+2+3+3+1
    assert floor.trie_cost([(1, 2, 3), (5,), (1, 2, 4), (1, 2, 3)]) == (5, 10)
    assert floor.trie_cost([(7, 8), (7,)]) == (2, 3)
    assert floor.trie_cost([]) == (0, 0)


def test_full_and_judge_sequences():
    floor = _floor()
    seqs, scored = floor.full_sequences([[1, 2], [1, 2], [3]], [[9, 8, 7], [9, 6]])
    assert seqs == [(1, 2, 9, 8), (1, 2, 9), (1, 2, 9, 8), (1, 2, 9), (3, 9, 8), (3, 9)]
    # two distinct histories, each scored at its last position and after 9 and after 9 8 (the follow-ups'
    # distinct proper prefixes)
    assert scored == 2 * 3
    seqs, scored = floor.judge_sequences([4, 4], [[1], [1], [2]])
    assert seqs == [(4, 4, 1), (4, 4, 1), (4, 4, 2)] and scored == 2


def test_bf16_pricing_is_refused_where_the_cpu_has_no_native_bf16(tmp_path, monkeypatch, capsys):
    import pytest
    import torch

    from dialeval.models import cpu

    floor = _floor()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(cpu, "cpu_kind", lambda: cpu.kind_from_flags("avx2 avx512f"))
    monkeypatch.setattr("sys.argv", ["leaderboard_floor.py", "--data-dir", str(tmp_path), "--dtype", "bf16"])
    with pytest.raises(SystemExit) as e:
        floor.main()
    assert e.value.code == 2
    assert "--dtype bf16: this CPU (avx512) has neither avx512_bf16 nor AMX" in capsys.readouterr().err
    assert floor.OPTIONS == {}
