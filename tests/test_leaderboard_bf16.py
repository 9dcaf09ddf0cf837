"""The fp32-against-bf16 leaderboard benchmark (benchmarks/leaderboard_bf16.py): its comparison of two boards,
checked on hand-made rows whose expected values are worked out by hand; its refusal where bf16 is emulated."""

import math
from pathlib import Path

import pytest
from repo_scripts import load_script

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "leaderboard_bf16.py"


def _bench():
    return load_script("benchmarks/leaderboard_bf16.py")


def _row(metric, dataset, config, statistic, value, lo, hi, seconds, level="item"):
    return {"metric": metric, "dataset": dataset, "config": config, "target": "overall", "level": level,
            "statistic": statistic, "value": value, "ci_low": lo, "ci_high": hi, "seconds": seconds, "n": 50,
            "unit_rows": 60}


NAN = float("nan")
FP32 = [
    _row("full_followup", "fed", "turn", "spearman", 0.300, 0.20, 0.40, 10.0),       # A
    _row("full_followup", "fed", "turn", "pearson", 0.500, 0.49, 0.53, 10.0),        # B
    _row("full_followup", "fed", "turn", "spearman", 0.5, -1.0, 1.0, 10.0, "system"),  # C
    _row("llm_judge", "fed", "turn", "spearman", NAN, NAN, NAN, 6.0),                # D
    _row("distinct_n", "contest", "x", "spearman", 0.25, 0.25, 0.25, 0.02),          # E
    _row("sem_ent", "contest", "x", "spearman", 0.1, 0.0, 0.2, 3.0),                 # F
]
BF16 = [
    {**FP32[0], "value": 0.303, "seconds": 4.0},
    {**FP32[1], "value": 0.5045, "seconds": 4.0},
    {**FP32[2], "value": 1.0, "seconds": 4.0},
    {**FP32[3], "seconds": 5.0},
    {**FP32[4], "seconds": 0.03},
    {**FP32[5], "value": 0.1001, "seconds": 2.0},
]


def test_each_correlation_against_both_limits():
    bench = _bench()
    got = bench.compare_correlations(FP32, BF16)
    assert [c["meets both"] for c in got] == [True, False, False, True, True, True]
    a, b, c, d, e, f = got
    # A: |Δ| 0.003 < 0.005, and < 0.2 / 10 = 0.02
    assert a["abs_delta"] == pytest.approx(0.003) and a["fp32_ci_width"] == pytest.approx(0.2)
    # B: |Δ| 0.0045 < 0.005, but not < 0.04 / 10 = 0.004
    assert b["under 0.005"] and not b["under width/10"] and b["fp32_ci_width"] == pytest.approx(0.04)
    # C: a system-level ρ that jumps from 0.5 to 1.0 (interval width 2): |Δ| 0.5 misses both
    assert c["level"] == "system" and c["abs_delta"] == pytest.approx(0.5)
    assert not c["under 0.005"] and not c["under width/10"]
    # D: undefined in both runs; E: unchanged on an interval of no width
    assert d["abs_delta"] is None and d["fp32_ci_width"] is None
    assert e["abs_delta"] == 0 and e["fp32_ci_width"] == 0
    assert f["abs_delta"] == pytest.approx(0.0001)


def test_a_row_missing_from_one_run_meets_neither():
    bench = _bench()
    (only,) = bench.compare_correlations(FP32[:1], [])
    assert only["bf16"] is None and only["abs_delta"] is None and not only["meets both"]


def test_units_their_kind_speed_up_and_correlations():
    bench = _bench()
    corr = bench.compare_correlations(FP32, BF16)
    units = {u["metric"]: u for u in bench.compare_units(FP32, BF16, ["full_followup", "llm_judge", "sem_ent"], corr)}
    full = units["full_followup"]
    assert (full["unit"], full["rows"], full["kind"], full["fp32 s"], full["bf16 s"]) == ("fed/turn", 60, "LM", 10.0, 4.0)
    assert full["speed-up"] == pytest.approx(2.5) and full["correlations within"] == "1 of 3"
    # the largest |Δ| is C's 0.5; the largest |Δ| / width too: C 0.5 / 2 = 0.25 (B 0.1125, A 0.015)
    assert full["max abs Δ"] == pytest.approx(0.5) and full["max abs Δ / width"] == pytest.approx(0.25)
    assert units["llm_judge"]["speed-up"] == pytest.approx(1.2) and units["llm_judge"]["max abs Δ"] is None
    assert units["sem_ent"]["kind"] == "encoder" and units["sem_ent"]["speed-up"] == pytest.approx(1.5)
    assert units["distinct_n"]["kind"] == "same route" and units["distinct_n"]["speed-up"] is None
    assert units["distinct_n"]["correlations within"] == "1 of 1"


def test_summary_of_the_board():
    bench = _bench()
    corr = bench.compare_correlations(FP32, BF16)
    s = bench.summarize(bench.compare_units(FP32, BF16, ["full_followup", "llm_judge", "sem_ent"], corr), corr)
    # LM units: (10 + 6) / (4 + 5) = 16 / 9; the slowest is the judge's 6 / 5; the encoder's 3 / 2
    assert s["lm_speedup"] == pytest.approx(16 / 9) and s["encoder_speedup"] == pytest.approx(1.5)
    assert s["lm_slowest_unit"] == {"metric": "llm_judge", "unit": "fed/turn", "speed-up": pytest.approx(1.2)}
    assert (s["correlations"], s["correlations_within"]) == (6, 4)
    assert s["worst_correlation"]["level"] == "system" and s["worst_correlation"]["abs_delta"] == pytest.approx(0.5)
    assert s["speed_target_met"] is False and s["correlation_target_met"] is False
    line = bench.summary_line(s)
    assert "1.78× faster in bf16 overall" in line and "slowest unit llm_judge on fed/turn 1.20×" in line
    assert "encoder units 1.50×" in line and "4 of 6 correlations" in line and "|Δ| 0.5000" in line
    # under a tenth of the width: A, F, and D (undefined in both) and E (unmoved); the largest share is C's 0.5 / 2
    assert s["within_width_count"] == 4 and s["largest_width_share"] == pytest.approx(0.25)
    assert "4 of 6 move by less than a tenth of their interval's width (the largest move is 0.250 of its" in line


def test_the_worst_correlation_is_the_one_nearest_its_limit():
    bench = _bench()
    # X moves most (0.004 of 0.005: 0.8 of its limit; 0.004 of a tenth of 1.0: 0.04); Y moves 0.001, which is
    # 0.2 of 0.005 but 0.909 of a tenth of its 0.011-wide interval: Y is nearer a limit
    fp32 = [_row("llm_judge", "fed", "turn", "spearman", 0.2, 0.0, 1.0, 1.0),
            _row("llm_judge", "fed", "turn", "pearson", 0.2, 0.2, 0.211, 1.0)]
    bf16 = [{**fp32[0], "value": 0.204}, {**fp32[1], "value": 0.201}]
    corr = bench.compare_correlations(fp32, bf16)
    assert all(c["meets both"] for c in corr)
    worst = bench.summarize(bench.compare_units(fp32, bf16, ["llm_judge"], corr), corr)["worst_correlation"]
    assert worst["statistic"] == "pearson" and worst["abs_delta"] == pytest.approx(0.001)


def test_met_when_every_lm_unit_is_fast_enough_and_nothing_moves():
    bench = _bench()
    fp32, bf16 = FP32[:1] + FP32[4:5], [{**FP32[0], "seconds": 5.0}, BF16[4]]
    corr = bench.compare_correlations(fp32, bf16)
    s = bench.summarize(bench.compare_units(fp32, bf16, ["full_followup"], corr), corr)
    assert s["lm_speedup"] == pytest.approx(2.0) and s["encoder_speedup"] is None
    assert s["speed_target_met"] and s["correlation_target_met"] and s["worst_correlation"]["abs_delta"] == 0
    assert not math.isnan(s["lm_speedup"])


def test_each_unit_keeps_its_fastest_round_and_rounds_must_agree():
    """Two rounds of FP32 (by hand): each unit's seconds is the least over the rounds (full_followup 10 then 8,
    llm_judge 6 then 7), its rows and values the first round's; a round whose values differ is refused."""
    bench = _bench()
    second = [{**r, "seconds": {"full_followup": 8.0, "llm_judge": 7.0}.get(r["metric"], r["seconds"])} for r in FP32]
    second[3]["value"] = float("nan")  # undefined in both rounds: another NaN object, still the same value
    merged = bench.fastest([FP32, second])
    assert [r["seconds"] for r in merged] == [8.0, 8.0, 8.0, 6.0, 0.02, 3.0]
    assert [r["value"] for r in merged[:3]] == [0.300, 0.500, 0.5] and len(merged) == len(FP32)
    with pytest.raises(ValueError, match="different rows or values"):
        bench.fastest([FP32, [{**FP32[0], "value": 0.31}, *FP32[1:]]])


def test_repeats_below_one_are_refused(capsys):
    with pytest.raises(SystemExit) as stop:
        _bench().parse_args(["--repeats", "0"])
    assert stop.value.code == 2 and "--repeats" in capsys.readouterr().err


def test_the_board_is_the_published_command():
    datasets, metrics = _bench().board_selection()
    assert datasets == ["contest", "fed", "holistic_pang2020"]
    assert {"full_followup", "llm_judge", "distinct_n", "column:metrics.SentBert"} <= set(metrics)


def test_refused_in_one_line_where_the_cpu_has_no_native_bf16(tmp_path, monkeypatch, capsys):
    import torch

    from dialeval.models import cpu

    bench = _bench()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(cpu, "cpu_kind", lambda: cpu.kind_from_flags("avx2 avx512f"))
    assert bench.main(["--data-dir", str(tmp_path), "--dataset", "fed", "--metric", "llm_judge"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dtype bf16: this CPU (avx512) has neither avx512_bf16 nor AMX" in err


REPO = PATH.parents[1]
PAGE = REPO / "docs" / "meta_evaluation.md"
RESULT = REPO / "docs" / "results" / "benchmarks" / "leaderboard_bf16.avx512-bf16.json"


def _cells(line):
    return [c.strip().replace("\\|", "|") for c in line.strip().strip("|").split(" | ")]


def _shown(cell, value):
    """Whether ``cell`` (``1.23``, ``1,024``, ``4.5e-05``) is ``value`` to the digits it shows."""
    mantissa, _, exponent = cell.replace(",", "").partition("e")
    half = 0.5 * 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))
    return abs(float(cell.replace(",", "")) - value) <= half * (1 + 1e-9)


def test_the_meta_evaluation_page_shows_the_result_file():
    """The page's region is what the generator makes of the result file, and read back from the page text, each
    table cell is that unit's value in the file; the file's counts agree with its own correlation list."""
    import json
    import re
    import sys

    sys.path.insert(0, str(REPO / "tools"))
    import sitegen

    text = PAGE.read_text(encoding="utf-8")
    assert sitegen.render_regions(text) == text, "docs/meta_evaluation.md: run python tools/sitegen.py readme"
    region = re.search(r"<!-- generated:benchmark-leaderboard_bf16.avx512-bf16 -->\n(.*?)<!-- /generated -->", text, re.S).group(1)
    result = json.loads(RESULT.read_text(encoding="utf-8"))
    assert f"`{result['command']}`" in region and " ".join(result["summary"].split()) in " ".join(region.split())
    lines = [line for line in region.splitlines() if line.startswith("|")]
    head, body = _cells(lines[0]), [_cells(line) for line in lines[2:]]
    assert len(body) == len(result["rows"]) and {"full_followup", "llm_judge"} <= {r["metric"] for r in result["rows"]}
    for cells, row in zip(body, result["rows"]):
        for key, cell in zip(head, cells):
            value = row[key]
            assert (cell == value if isinstance(value, str) else cell == "–" if value is None
                    else _shown(cell, float(value))), (row["metric"], row["unit"], key, cell, value)
    corr = result["correlations"]
    for row in result["rows"]:
        mine = [c for c in corr if (c["metric"], f"{c['dataset']}/{c['config']}") == (row["metric"], row["unit"])]
        assert row["correlations within"] == f"{sum(c['meets both'] for c in mine)} of {len(mine)}"
    lm = [r for r in result["rows"] if r["kind"] == "LM"]
    assert result["results"]["lm_speedup"] == pytest.approx(sum(r["fp32 s"] for r in lm) / sum(r["bf16 s"] for r in lm))
    assert result["results"]["correlations"] == len(corr)
    assert result["results"]["correlations_within"] == sum(c["meets both"] for c in corr)


def test_the_result_files_counts_are_its_correlation_lists():
    """The per-metric and item-level counts of the summary, recounted here from the file's own correlation list."""
    import json

    result = json.loads(RESULT.read_text(encoding="utf-8"))
    rows = result["correlations"]
    moved = {c["metric"] for c in rows if c["abs_delta"]}
    for metric in moved:
        mine = [c for c in rows if c["metric"] == metric]
        assert result["results"]["by_metric"][metric] == {
            "within": sum(c["abs_delta"] < 0.005 and c["abs_delta"] < c["fp32_ci_width"] / 10 for c in mine),
            "of": len(mine), "worst_abs_delta": max(c["abs_delta"] for c in mine)}
    assert set(result["results"]["by_metric"]) == moved
    item = [c for c in rows if c["level"] == "item"]
    assert result["results"]["item_level"] == {"within": sum(c["meets both"] for c in item), "of": len(item)}
    assert f"{result['results']['item_level']['within']} of {len(item)} at item level" in result["summary"]
