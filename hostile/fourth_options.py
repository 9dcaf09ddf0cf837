"""The fourth pass's options, plugins, numbers and hangs for ``hostile/tally.py`` (see :mod:`fourth_pass`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fourth_pass import (
    HANGS,
    NUMBERS,
    OPTIONS,
    Attempt,
    Classify,
    E,
    _right,
    board,
    forget,
    guarded,
    items,
    plugin,
)


def _with_env(value: str, call: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    old = os.environ.get("DIALEVAL_METRIC_PACKAGES")
    os.environ["DIALEVAL_METRIC_PACKAGES"] = value
    try:
        return call()
    finally:
        if old is None:
            os.environ.pop("DIALEVAL_METRIC_PACKAGES", None)
        else:
            os.environ["DIALEVAL_METRIC_PACKAGES"] = old


def _out_dash(root: Path, cli: Classify, argv: list[str]) -> tuple[str, str]:
    """``--out -`` run from ``root``: a folder named ``-`` made there is a silent result."""
    old = os.getcwd()
    os.chdir(root)
    try:
        kind, detail = cli(argv)
    finally:
        os.chdir(old)
    return ("silent", "made a folder named '-'") if (root / "-").exists() else (kind, detail)


def _shadow(root: Path, cli: Classify, argv: list[str]) -> tuple[str, str]:
    package = root / "shadow" / "shadowplug"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(
        "from dialeval.registry import declare\nMETRIC = declare(__name__, name='token_f1', title='x', summary='x', "
        "papers=('n',), urls=('n',), inputs='turns', module='x:y', meta_levels=('turn',), meta_adapter='x:y')\n",
        encoding="utf-8")
    import sys

    sys.path.insert(0, str(package.parent))
    try:
        return _with_env("shadowplug", lambda: cli(argv))
    finally:
        sys.path.remove(str(package.parent))
        forget("shadowplug")


def _bad_plugin(root: Path, kind: str, cli: Classify) -> tuple[str, str]:
    name = f"plug_{kind}"
    with plugin(root / "site", name, kind):
        return cli(["leaderboard", "--data", str(items(root / "d.jsonl")), "--metric", name, "--resamples", "100",
                    "--out", str(root / f"lb-{kind}")])


def _mutating_plugin(root: Path) -> tuple[str, str]:
    from scipy import stats as sps

    rows = [__import__("json").loads(line) for line in items(root / "d.jsonl").read_text(encoding="utf-8").splitlines()]
    with plugin(root / "site", "plug_mutates", "mutates"):
        report, _ = board(root, root / "lb-mutates", ["plug_mutates", "column:mine"])
    got = next((r["value"] for r in report["rows"] if r["metric"] == "column:mine" and r["statistic"] == "spearman"
                and r.get("level") == "item"), None)
    want = sps.spearmanr([r["mine"] for r in rows], [sum(r["relevance"]) / 2 for r in rows]).statistic
    return _right(got is not None and abs(got - want) < 1e-12, f"column:mine ρ={got} (scipy {want:.6f})")


def _progress(root: Path) -> tuple[str, str]:
    from dialeval.meta import leaderboard

    old, stamped = leaderboard.PROGRESS_EVERY, []
    leaderboard.PROGRESS_EVERY = 0.4
    try:
        with plugin(root / "site", "plug_slow", "slow"):
            leaderboard.build(None, root / "lb-slow", data=[items(root / "d.jsonl")], metrics=["plug_slow"],
                              n_resamples=100, log=lambda line: stamped.append((time.perf_counter(), line)))
    finally:
        leaderboard.PROGRESS_EVERY = old
    beats = [t for t, line in stamped if "plug_slow / d / turn: scoring" in line]
    gaps = [b - a for a, b in zip(beats, beats[1:])]
    return _right(len(beats) >= 3 and max(gaps) < 1.0, f"{len(beats)} progress lines in a 1.5 s step, every 0.4 s")


def _idf_pool() -> tuple[str, str]:
    import bert_score.utils

    from dialeval.reference.bertscore import compute_bertscore

    real = bert_score.utils.Pool

    def no_pool(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bert-score started a forked multiprocessing pool")

    bert_score.utils.Pool = no_pool
    try:
        out = compute_bertscore(["a cat sat on the mat", "dogs bark"], [["the cat sat"], ["a dog barks"]], idf=True)
    finally:
        bert_score.utils.Pool = real
    return _right(len(out["scores"]) == 2, "idf weights computed without a process pool")


def _idf_whole_set(root: Path) -> tuple[str, str]:
    import json

    from dialeval.reference.bertscore import compute_bertscore

    data = items(root / "idf.jsonl", 230)
    from dialeval.meta import leaderboard

    leaderboard.build(None, root / "lb-idf", data=[data], metrics=["bertscore"], n_resamples=100, log=lambda _: None,
                      metric_args={"bertscore": {"idf": True}})
    got = json.loads((root / "lb-idf" / "cache" / "bertscore__idf__turn.json").read_text(encoding="utf-8"))["scores"]
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    want = compute_bertscore([r["response"] for r in rows], [[r["reference"]] for r in rows], idf=True)["scores"]
    gap = max(abs(a - b) for a, b in zip(got, want))
    return _right(gap < 1e-6, f"largest difference from idf over the whole set: {gap:.2g}")


def option_attempts(root: Path, cli: Classify, lib: Classify) -> list[Attempt]:
    import dialeval

    root.mkdir(parents=True)
    data = items(root / "d.jsonl")
    big = root / "big.jsonl"
    big.write_text(data.read_text(encoding="utf-8").replace('"relevance": [1, ', '"relevance": [1e308, ', 1),
                   encoding="utf-8")
    scores = root / "s.jsonl"
    scores.write_text('{"id": "d1", "score": 1}\n', encoding="utf-8")
    lb = ["leaderboard", "--data", str(E), "--overall", "relevance"]
    out = ["--out", str(root / "r5")]
    return [
        (OPTIONS, "bleu_2:max_order=4", lambda: cli([*lb, "--metric", "bleu_2", "--metric-arg", "bleu_2:max_order=4",
                                                     *out])),
        (OPTIONS, "--metric-arg of a metric not scored", lambda: cli([*lb, "--metric", "bleu_2", "--metric-arg",
                                                                      "token_f1:lowercase=false", *out])),
        (OPTIONS, "--out -", lambda: _out_dash(root, cli, [*lb, "--metric", "bleu_2", "--out", "-"])),
        (OPTIONS, "--scores a|b", lambda: cli([*lb, "--scores", f"a|b={scores}", *out])),
        (OPTIONS, "--scores name with a newline", lambda: cli([*lb, "--scores", f"a\nb={scores}", *out])),
        *[(OPTIONS, f"DIALEVAL_METRIC_PACKAGES typo: {cmd[0]}", lambda c=cmd: _with_env("dialeval_no_such", lambda: cli(c)))
          for cmd in (["score", "--metric", "distinct_n", "--input", str(E)], [*lb, "--metric", "bleu_2", *out],
                      ["meta-eval", "--data", str(E), "--metric", "bleu_2", "--out", str(root / "m.json")])],
        (OPTIONS, "a plugin named like a built-in", lambda: _shadow(root, cli, [*lb, "--metric", "token_f1", *out])),
        (OPTIONS, "a plugin returning too few scores", lambda: guarded(lambda: _bad_plugin(root, "short", cli))),
        (OPTIONS, "a plugin that raises", lambda: guarded(lambda: _bad_plugin(root, "raises", cli))),
        (OPTIONS, "a plugin editing its rows in place", lambda: guarded(lambda: _mutating_plugin(root))),
        (NUMBERS, "a rating of 1e308", lambda: cli(["leaderboard", "--data", str(big), "--metric", "column:mine",
                                                    *out])),
        (NUMBERS, "bertscore idf=true: leaderboard chunks vs the whole set",
         lambda: guarded(lambda: _idf_whole_set(root), 300)),
        (NUMBERS, "bertscore num_layers=99 (evaluate.load)", lambda: lib(lambda: dialeval.load("bertscore").compute(
            predictions=["a b"], references=[["a b"]], num_layers=99))),
        (NUMBERS, "bertscore num_layers=99 (score)", lambda: cli(["score", "--metric", "bertscore", "--input",
                                                                  str(data), "--column", "predictions=response",
                                                                  "--column", "references=reference", "--metric-arg",
                                                                  "num_layers=99"])),
        (NUMBERS, "bertscore num_layers=99 (leaderboard)", lambda: cli(["leaderboard", "--data", str(data), "--metric",
                                                                        "bertscore", "--metric-arg",
                                                                        "bertscore:num_layers=99", *out])),
        (HANGS, "bertscore idf without a forked pool", lambda: guarded(_idf_pool, 120)),
        (HANGS, "a progress line during one long step", lambda: guarded(lambda: _progress(root), 60)),
    ]
