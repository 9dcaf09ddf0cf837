"""The newest surfaces for ``hostile/tally.py``: output paths through a missing folder (``--out missing/../FOLDER``
on every output-writing command), Vendi's n-gram kernel on short responses and q in signatures, the quality-weighted
Vendi Score's qualities and contexts, the LLM judge's pairwise ties, contexts, rubric and long histories, the
LightEval and Inspect adapters' options, empty generations and counts, ``hub build``'s plot, wheel, eval_results
names and malformed reports, and MCP's refusals.

Each attempt returns ``(kind, detail)`` like the tally's own: ``one-line``, ``accepted`` (the right result, compared
with a value computed here by hand), ``crash`` or ``silent``. ``FOLDER`` holds files the tally stamps, so a command
that writes into it or removes it counts as destroyed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Attempt = tuple[str, str, Callable[[], tuple[str, str]]]
Classify = Callable[..., tuple[str, str]]
CATEGORY_PATHS = "newest: output paths"
CATEGORY_NUMBERS = "newest: numbers"
CATEGORY_REFUSALS = "newest: refusals"


def _right(ok: bool, detail: Any) -> tuple[str, str]:
    return ("accepted" if ok else "silent"), str(detail)[:160]


def _guarded(call: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    try:
        return call()
    except BaseException as exc:  # noqa: BLE001 - a traceback is what we count
        return "crash", f"{type(exc).__name__}: {exc}"[:160]


def _in(folder: Path, fn: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    import os

    old = os.getcwd()
    os.chdir(folder)
    try:
        return fn()
    finally:
        os.chdir(old)


def _path_attempts(root: Path, cli: Classify) -> list[Attempt]:
    """Every output-writing command with ``--out missing/../keep`` and a failing input, run from ``root``."""
    (root / "keep" / "inner").mkdir(parents=True)
    (root / "keep" / "notes.txt").write_text("the user's notes\n", encoding="utf-8")
    (root / "keep" / "inner" / "data.json").write_text('{"a": 1}', encoding="utf-8")
    (root / "bad.jsonl").write_text('{"x": 1}\nnot json\n', encoding="utf-8")
    (root / "bad.txt").write_text("", encoding="utf-8")
    (root / "nodata").mkdir()
    (root / "nested" / "deeper").mkdir(parents=True)
    out = "missing/../keep"
    commands = {
        "score --output": ["score", "--metric", "distinct_n", "--input", "bad.jsonl", "--output", out],
        "fit-space --out": ["fit-space", "--reference", "bad.txt", "--out", out],
        "dress-weights --out": ["dress-weights", "--space", "nodata", "--train", "bad.txt", "--generated", "bad.txt",
                                "--out", out],
        "datasets export --out": ["datasets", "export", "fed", "--data-dir", "nodata", "--out", out],
        "dialstory-make --out": ["datasets", "dialstory-make", "--input", "bad.jsonl", "--out", out],
        "dialstory-make --dialspk-out": ["datasets", "dialstory-make", "--input", "bad.jsonl", "--out", "s.jsonl",
                                         "--dialspk-out", out],
        "meta-eval --out": ["meta-eval", "fed", "--metric", "column:x", "--data-dir", "nodata", "--out", out],
        "meta-eval --plot": ["meta-eval", "fed", "--metric", "column:x", "--data-dir", "nodata", "--out", "m.json",
                             "--plot", out],
        "train-coherence --out": ["train-coherence", "--data", "nodata", "--encoder", "x", "--out", out],
        "dialspk-baseline --out": ["dialspk-baseline", "--data", "bad.jsonl", "--out", out],
        "hub build --out": ["hub", "build", "--org", "a", "--out", out, "--from-index", "--data-dir", "nodata",
                            "--only", "fed"],
        "leaderboard --out": ["leaderboard", "--data-dir", "nodata", "--dataset", "contest", "--metric",
                              "distinct_n", "--out", out],
    }

    def run(argv: list[str]) -> tuple[str, str]:
        kind, detail = _in(root, lambda: cli(argv))
        if (root / "missing").exists():
            return "silent", "created missing/ on the way"
        return kind, detail

    attempts = [(CATEGORY_PATHS, f"{name} missing/../keep", lambda a=argv: run(a)) for name, argv in commands.items()]
    nested = ["leaderboard", "--data-dir", "../../nodata", "--dataset", "contest", "--metric", "distinct_n", "--out",
              "nope/../.."]
    attempts.append((CATEGORY_PATHS, "leaderboard --out nope/../.. from a nested folder",
                     lambda: _in(root / "nested" / "deeper", lambda: cli(nested))))
    return attempts


def _number_attempts(lm: Callable[[], str]) -> list[Attempt]:
    from dialeval.io.signature import parse_signature
    from dialeval.similarity.vendi import compute_vendi

    short = ["Yes .", "ok", "no"]

    def vendi(q: Any) -> tuple[str, str]:
        got = compute_vendi([short], kernel="ngram", q=q)["scores"][0]
        return _right(abs(got - 3.0) < 1e-9, f"VS={got} (3 responses, no n-gram in common: 3)")

    def signature() -> tuple[str, str]:
        a, b = (compute_vendi([short], kernel="ngram", q=q)["signature"] for q in (0.9999999, 1.0))
        return _right(a != b and float(parse_signature(a)["q"]) == 0.9999999, f"{a} vs {b}")

    def tie() -> tuple[str, str]:
        from dialeval.judge.llm_judge import compare

        ctx = [[f"turn {i} of the talk", "how are you ?"] for i in range(12)]
        responses = [f"I am fine {i} ." + " yes" * (i % 4) for i in range(12)]
        got = compare(ctx, responses, responses, model=lm(), backend="torch", batch_size=5)["win_rate_a"]
        return _right(got == 0.5, f"win_rate_a={got} (identical responses: 0.5)")

    def long_history() -> tuple[str, str]:
        from dialeval.judge.llm_judge import compute_llm_judge

        start = time.perf_counter()
        compute_llm_judge([[f"turn {i} hello" for i in range(5000)]], ["fine ."], model=lm(), backend="torch")
        took = time.perf_counter() - start
        return _right(took < 30, f"{took:.1f} s for 5,000 turns")

    out: list[Attempt] = [(CATEGORY_NUMBERS, f"vendi ngram short q={q}", lambda q=q: _guarded(lambda: vendi(q)))
                          for q in (2, 0.999999, 1.001, 1.000001, 0)]
    out += [(CATEGORY_NUMBERS, "signature q=0.9999999 vs 1", lambda: _guarded(signature)),
            (CATEGORY_NUMBERS, "judge compare(R, R) batch_size=5", lambda: _guarded(tie)),
            (CATEGORY_NUMBERS, "judge 5,000-turn history", lambda: _guarded(long_history))]
    return out


def _refusal_attempts(root: Path, lm: Callable[[], str], cli: Classify, lib: Classify) -> list[Attempt]:
    from dialeval.judge.llm_judge import compute_llm_judge
    from dialeval.similarity.quality_vendi import compute_quality_vendi

    short = [["Yes .", "ok", "no"]]
    qv = lambda **kw: lambda: compute_quality_vendi(short, kernel="ngram", **kw)  # noqa: E731
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("qualities 1e308", qv(qualities=[[1e308, 1e308, 1.0]])),
        ("quality_vendi contexts=[dict]", qv(qualities=[[1.0] * 3], contexts=[{"a": "b"}])),
        ("quality_vendi contexts=[None]", qv(qualities=[[1.0] * 3], contexts=[None])),
        ("judge contexts=[dict]", lambda: compute_llm_judge([{"a": "b"}], ["x"], model=lm())),
        ("judge lone surrogate", lambda: compute_llm_judge([["a\ud800"]], ["x"], model=lm())),
    ]
    out: list[Attempt] = [(CATEGORY_REFUSALS, name, lambda c=c: lib(c)) for name, c in calls]
    for name, options in (("distinct_n", {"n": "abc"}), ("vendi_score", {"q": -1}), ("vendi_score", {"kernel": "rbf"}),
                          ("llm_judge_turn", {"rubric": 5}), ("llm_judge_turn", {"model": 5})):
        for adapter in ("lighteval", "inspect"):
            out.append((CATEGORY_REFUSALS, f"{adapter} {name} {options}",
                        lambda a=adapter, n=name, o=options: lib(lambda: _adapter(a, n, o))))
    out.append((CATEGORY_REFUSALS, "lighteval counts differ", lambda: lib(lambda: _lighteval_mismatch(lm()))))
    out += _hub_attempts(root, cli, lib)
    out.append((CATEGORY_REFUSALS, "MCP skipped is a tool error", _mcp_skipped))
    return out


def _adapter(kind: str, name: str, options: dict[str, Any]) -> Any:
    if kind == "lighteval":
        from dialeval.integrations.lighteval import metric

        return metric(name, **options)
    from dialeval.integrations.inspect import scorer

    return scorer(name, **options)


def _lighteval_mismatch(model: str) -> Any:
    from lighteval.models.model_output import ModelResponse

    from dialeval.integrations import lighteval as dl

    fn = dl.metric("llm_judge_turn", model=model, backend="torch").sample_level_fn
    docs = [dl.dialogue_doc(["Hi ."], "t"), dl.dialogue_doc(["Bye ."], "t")]
    return fn.compute([ModelResponse(text=["ok"])], docs)


def _hub_attempts(root: Path, cli: Classify, lib: Classify) -> list[Attempt]:
    from dialeval.meta.publish import write_hub_dataset

    def board(name: str, metrics: tuple[str, ...], **change: Any) -> Path:
        folder = root / name
        folder.mkdir()
        rows = [{"metric": m, "dataset": "fed", "config": "turn", "target": "overall", "statistic": "spearman",
                 "value": 0.5, "ci_low": 0.1, "ci_high": 0.7, "n": 10, "level": "item", **change} for m in metrics]
        (folder / "leaderboard.json").write_text(json.dumps({"generator": "dialeval leaderboard", "rows": rows,
                                                             "pairs": []}), encoding="utf-8")
        return folder

    secret = root / "secret.txt"
    secret.write_text("private", encoding="utf-8")
    linked = board("lb-link", ("distinct_n",))
    (linked / "leaderboard.png").symlink_to(secret)
    collide = board("lb-collide", ("column:x", "column-x"))
    bogus = board("lb-bogus", ("distinct_n",), dataset="bogus")
    build = ["hub", "build", "--org", "me", "--no-datasets", "--only", "distinct_n"]
    return [
        (CATEGORY_REFUSALS, "hub build symlinked leaderboard.png",
         lambda: cli([*build, "--from-index", "--out", str(root / "hub1"), "--leaderboard", str(linked)])),
        (CATEGORY_REFUSALS, "hub build --wheel secret.txt",
         lambda: cli([*build, "--out", str(root / "hub2"), "--wheel", str(secret)])),
        (CATEGORY_REFUSALS, "eval_results column:x vs column-x",
         lambda: lib(lambda: write_hub_dataset(collide, root / "hub3", "me"))),
        (CATEGORY_REFUSALS, "leaderboard.json dataset bogus",
         lambda: lib(lambda: write_hub_dataset(bogus, root / "hub4", "me"))),
    ]


def _mcp_skipped() -> tuple[str, str]:
    import gradio as gr

    from dialeval import registry
    from dialeval.ui.mcp import metric_tool

    async def score(progress: Any, request: Any, texts: Any, selected: Any) -> dict[str, Any]:
        return {"vendi_score": {"status": "skipped", "reason": "Responses: give at least 2 responses."}}

    try:
        asyncio.run(metric_tool(registry.get("vendi_score"), score)(None, "a", ""))
    except gr.Error as exc:
        return "one-line", str(exc.message)[:160]
    except BaseException as exc:  # noqa: BLE001
        return "crash", f"{type(exc).__name__}: {exc}"[:160]
    return "silent", "isError false with status skipped"


def newest_attempts(root: Path, cli: Classify, lib: Classify) -> list[Attempt]:
    """The attempts of this module (inputs written under ``root``)."""
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    root.mkdir(parents=True, exist_ok=True)
    built: dict[str, str] = {}

    def lm() -> str:
        if "lm" not in built:
            built["lm"] = str(build_tiny_causal_lm(root / "judge-lm", seed=3))
        return built["lm"]

    lm()
    paths = root / "paths"
    paths.mkdir()
    return [*_path_attempts(paths, cli), *_number_attempts(lm), *_refusal_attempts(root, lm, cli, lib)]

