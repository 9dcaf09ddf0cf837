"""Generated hostile option values for ``hostile/tally.py``: every declared metric (``dialeval.registry``) ×
every declared option × the bad values its type admits (below its minimum, above its maximum, 10**22, NaN, ±inf,
a bool, a string, a list, a float for an int, an unknown choice, ...), in the library (``dialeval.load(...).compute``)
and in the CLI (``dialeval score --metric M --metric-arg OPTION=VALUE``). Model metrics run on tiny random models
built here (never a download), so a value that slips through computes instead of failing on a missing model.

A value that must be refused and is not counts as ``silent``; ``None`` (documented as "the default") and ``inf`` where
the option's help allows it may be accepted, but then must give the default's result (else ``silent``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

Attempt = tuple[str, str, Callable[[], tuple[str, str]]]  # (category, name, run → (kind, detail))
MAY_ACCEPT = "may-accept"


def bad_values(option: Any) -> list[tuple[str, Any, bool]]:
    """(label, value, must be refused) for one declared option."""
    t, low, high = option.type, option.minimum, option.maximum
    out: list[tuple[str, Any, bool]] = []
    number = t in ("int", "float")
    if number and low is not None:
        below = low if option.exclusive_minimum else (low - 1 if t == "int" else low - 0.5)
        out.append(("below minimum", int(below) if t == "int" else float(below), True))
    if number and high is not None:
        out.append(("above maximum", int(high) + 1 if t == "int" else float(high) * 2 + 1, True))
    if number:
        inf_ok = "inf" in option.help
        out += [("10**22", 10**22, high is not None), ("NaN", math.nan, True), ("inf", math.inf, not inf_ok),
                ("-inf", -math.inf, True), ("bool", True, True), ("str", "abc", True), ("list", [3], True)]
        if t == "int":
            out.append(("float for int", 2.5, True))
    elif t == "ints":
        top = int(high) + 1 if high is not None else 10**22
        out += [("order 0", [0], True), ("order above maximum", [top], True), ("10**22", 10**22, True),
                ("NaN", math.nan, True), ("inf", math.inf, True), ("bool", True, True), ("str", "1,2", True),
                ("empty list", [], True), ("float order", [1.5], True), ("bool order", [True], True),
                ("None order", [None], True), ("float for int", 2.5, True)]
    elif t == "bool":
        out += [("str", "yes", True), ("int 2", 2, True), ("NaN", math.nan, True), ("list", [True], True)]
    elif t == "str":
        out += [("int", 5, True), ("list", ["x"], True), ("NaN", math.nan, True), ("bool", True, True)]
        if option.choices:
            out.append(("unknown choice", "bogus-choice", True))
    elif t in ("path", "model"):
        out += [("int", 5, True), ("list", ["x"], True), ("NaN", math.nan, True), ("bool", True, True)]
    elif t == "texts":
        out += [("one string", "just one text", True), ("int", 5, True), ("ints", [1, 2], True),
                ("None item", [None], True), ("NaN", math.nan, True), ("empty list", [], True)]
    else:  # any
        out += [("int", 5, True), ("str", "x", True), ("NaN", math.nan, True), ("bool", True, True)]
    if option.default is not None and None not in option.choices:  # a None choice has its own meaning
        out.append(("None (the default)", None, False))
    return out


def _cli_value(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    return json.dumps(value)


def tiny_models(root: Path) -> dict[str, str]:
    """Tiny random NLI model, sentence encoder and causal LM under ``root`` (seconds, no download)."""
    from dialeval.testing.blenderbot import build_tiny_causal_lm
    from dialeval.testing.hub_cache import build_tiny_sentence_encoder
    from dialeval.testing.roberta import tiny_nli_model

    return {"model": str(tiny_nli_model(root / "nli")), "encoder": str(build_tiny_sentence_encoder(root / "enc")),
            "lm": str(build_tiny_causal_lm(root / "lm", arch="gpt2"))}


def base_options(decl: Any, models: dict[str, str]) -> dict[str, Any]:
    """Valid options under which a metric computes here cheaply (tiny models, a small fitted space)."""
    opts: dict[str, Any] = {}
    if decl.model_option:
        opts[decl.model_option] = models["lm"] if decl.inputs == "dialogues" else models[decl.model_option]
    if decl.references_option:
        opts[decl.references_option] = [f"reference reply number {i} about {w}" for i, w in
                                        enumerate(["tea", "rain", "cats", "maps"] * 6)]
        opts["k"] = 2
    return opts


def _config(decl: Any) -> str | None:
    return decl.ui_config or (decl.configs[0] if decl.configs != ("default",) else None)


def _lib(module: Any, example: dict[str, Any], opts: dict[str, Any], must: bool, default: Any,
         compare: bool) -> tuple[str, str]:
    """Classify one library call; an accepted value that is documented as the default (``compare``) must give the
    default's result."""
    try:
        out = module.compute(**example, **opts)
    except (ValueError, TypeError) as exc:
        return ("one-line" if "\n" not in str(exc) else "crash"), str(exc)[:150]
    except BaseException as exc:  # noqa: BLE001 - what we count
        return "crash", f"{type(exc).__name__}: {exc}"[:150]
    if must:
        return "silent", f"accepted: {str(out)[:100]}"
    if not compare:
        return "unverified", "accepted, as the option's help allows; the result is not compared"
    return ("accepted", "same result as the default") if _same(out, default) else ("silent", "differs from the default")


def _same(a: Any, b: Any) -> bool:
    drop = {"signature", "time", "seconds"}
    strip = (lambda d: {k: v for k, v in d.items() if k not in drop}) if isinstance(a, dict) else (lambda d: d)
    return json.dumps(strip(a), sort_keys=True, default=str) == json.dumps(strip(b), sort_keys=True, default=str)


def cli_input(decl: Any, folder: Path) -> Path:
    """The declaration's worked example as a JSONL file ``score`` reads (one record per item)."""
    ex = decl.example
    keys = [k for k in ex if isinstance(ex[k], list)]
    path = folder / f"{decl.name}.jsonl"
    rows = [{k: ex[k][i] for k in keys} for i in range(len(ex[keys[0]]))]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _cli(argv: list[str], must: bool, runner: Callable[[list[str]], tuple[int, str, str]]) -> tuple[str, str]:
    rc, out, err = runner(argv)
    lines = [line for line in err.splitlines() if line.strip()]
    if rc == 2 and len(lines) == 1 and "Traceback" not in err:
        return "one-line", lines[0][:150]
    if rc == 0:
        return ("silent", f"exit 0: {out[-100:]}") if must else ("unverified", "exit 0; the result is not compared")
    return "crash", f"rc={rc} {err[-150:]}"


def option_attempts(folder: Path, models: dict[str, str],
                    runner: Callable[[list[str]], tuple[int, str, str]]) -> list[Attempt]:
    """Every metric × option × bad value, in the library and in the CLI."""
    import dialeval
    from dialeval import registry

    attempts: list[Attempt] = []
    for decl in registry.declarations().values():
        config, base = _config(decl), base_options(decl, models)
        state: dict[str, Any] = {}

        def module(decl: Any = decl, config: str | None = config, state: dict = state) -> Any:
            if "module" not in state:
                state["module"] = dialeval.load(decl.name, config) if config else dialeval.load(decl.name)
                state["default"] = state["module"].compute(**decl.example, **base_options(decl, models))
            return state["module"]

        data = cli_input(decl, folder)
        cli_base = ["score", "--metric", decl.name, "--input", str(data)]
        if config and len(decl.configs) > 1:
            cli_base += ["--metric-config", config]
        for option in decl.options:
            for label, value, must in bad_values(option):
                opts = {**base, option.name: value}
                name = f"{decl.name}.{option.name}={label}"
                attempts.append(("options: library", name, lambda opts=opts, must=must, m=module, d=decl, s=state,
                                 none=value is None: _lib(m(), d.example, opts, must, s["default"], none)))
                argv = [*cli_base, *(a for k, v in opts.items() for a in ("--metric-arg", f"{k}={_cli_value(v)}"))]
                attempts.append(("options: CLI", name, lambda argv=argv, must=must: _cli(argv, must, runner)))
    return attempts
