"""A fourth hostile pass for ``hostile/tally.py``: own annotations, plugins, baselines and the leaderboard's score
cache. The cache must not serve numbers its key does not cover (an edit to the dialeval code a metric calls, a
plugin's helper module, new weights in the same model folder, a library upgrade), must not block on a FIFO nor write
through a symlinked cache folder or entry; the leaderboard's options and plugins (a variant row against its own
option, an option of a metric not scored, ``--out -``, a ``--scores`` name that breaks the table, a plugin module
that does not import, a plugin named like a built-in, one that returns too few scores, raises or edits its rows);
numbers (a rating of 1e308, BERTScore's idf over the whole set, ``num_layers`` beyond the model); hangs (a FIFO
entry, bert-score's forked idf pool, a long step without a progress line); and the messages of the last pass that
named too little (quality_options, batch_size as text, a cache part's seconds, MCP requests, LightEval's per-item
qualities, hub rows of an unknown unit: :mod:`fourth_messages`); ``tally.py`` runs the three.

Each attempt returns ``(kind, detail)`` like the tally's own, plus ``hang`` for a call still running after its
bound. Inputs the tally stamps are written when the attempts are built; files an attempt edits on purpose (a plugin
helper, model weights) are written by the attempt itself, so only an unintended change counts as destroyed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Attempt = tuple[str, str, Callable[[], tuple[str, str]]]
Classify = Callable[..., tuple[str, str]]
CACHE, OPTIONS, NUMBERS, HANGS = ("fourth: score cache", "fourth: options and plugins", "fourth: numbers",
                                  "fourth: hangs")
E = Path(__file__).resolve().parents[1] / "docs" / "examples" / "ratings.jsonl"
PLUGIN = '''
from dialeval.registry import Option, declare

METRIC = declare(__name__, name="{name}", title="t", summary="t", papers=("none",), urls=("none",), inputs="turns",
                 module="{name}.adapter:Nothing", options=(Option("model", None, "any"),), model_option="model",
                 meta_levels=("turn",), meta_adapter="{name}.adapter:factory")
'''
ADAPTERS = {
    "cache": "from pathlib import Path\nfrom {name}.helper import FACTOR\n\n\ndef factory(options, config):\n"
             "    w = float((Path(options['model']) / 'w.txt').read_text()) if options.get('model') else 1.0\n"
             "    return lambda rows: {{'scores': [FACTOR * w * len(r['response'].split()) for r in rows], "
             "'signature': 'p'}}\n",
    "short": "def factory(options, config):\n    return lambda rows: {{'scores': [1.0] * (len(rows) - 1), "
             "'signature': 'p'}}\n",
    "raises": "def factory(options, config):\n    def score(rows):\n        raise KeyError('response_text')\n"
              "    return score\n",
    "mutates": "def factory(options, config):\n    def score(rows):\n        out = [float(len(r['response'])) for r in "
               "rows]\n        for r in rows:\n            r['annotation_means'].clear()\n"
               "        return {{'scores': out, 'signature': 'p'}}\n    return score\n",
    "slow": "import time\n\n\ndef factory(options, config):\n    def score(rows):\n        time.sleep(1.5)\n"
            "        return {{'scores': [1.0 * len(r['response']) for r in rows], 'signature': 'p'}}\n    return score\n",
}


def _right(ok: bool, detail: Any) -> tuple[str, str]:
    return ("accepted" if ok else "silent"), str(detail)[:160]


def guarded(call: Callable[[], tuple[str, str]], seconds: int = 120) -> tuple[str, str]:
    """``call()``, with ``hang`` when it runs past ``seconds`` and ``crash`` for an exception escaping it."""
    def stop(*_: Any) -> None:
        raise TimeoutError

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        return call()
    except TimeoutError:
        return "hang", f"still running after {seconds} s"
    except BaseException as exc:  # noqa: BLE001 - a traceback is what we count
        return "crash", f"{type(exc).__name__}: {exc}"[:160]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def plugin(root: Path, name: str, kind: str) -> Iterator[Path]:
    """The plugin ``name`` (adapter ``kind``) written under ``root`` and registered for the block's length."""
    package = root / name
    if not package.exists():
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(PLUGIN.format(name=name), encoding="utf-8")
        (package / "adapter.py").write_text(ADAPTERS[kind].format(name=name), encoding="utf-8")
        (package / "helper.py").write_text("FACTOR = 1.0\n", encoding="utf-8")
    old = os.environ.get("DIALEVAL_METRIC_PACKAGES")
    sys.path.insert(0, str(root))
    os.environ["DIALEVAL_METRIC_PACKAGES"] = name
    try:
        yield package
    finally:
        sys.path.remove(str(root))
        if old is None:
            os.environ.pop("DIALEVAL_METRIC_PACKAGES", None)
        else:
            os.environ["DIALEVAL_METRIC_PACKAGES"] = old
        forget(name)


def forget(name: str) -> None:
    for module in [m for m in sys.modules if m.split(".")[0] == name]:
        sys.modules.pop(module)


def items(path: Path, n: int = 40) -> Path:
    """``n`` rated rows with a reference and a stored column ``mine`` (written once)."""
    if not path.exists():
        words = ["fine", "thanks", "good", "day", "very", "well", "and", "you"]
        rows = [{"id": f"i{i}", "context": ["hello", "how are you"], "response": " ".join(words[: i % 6 + 2]),
                 "reference": ["fine thanks and you", "good day to you"][i % 2], "system": f"s{i % 4}",
                 "relevance": [1 + (i * 7) % 5, 1 + (i * 3) % 5], "mine": (i * 13) % 17 / 17} for i in range(n)]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def board(root: Path, out: Path, metrics: list[str], **kw: Any) -> tuple[dict[str, Any], list[str]]:
    from dialeval.meta import leaderboard

    logs: list[str] = []
    report = leaderboard.build(None, out, data=[items(root / "d.jsonl")], metrics=metrics, n_resamples=100,
                               log=logs.append, **kw)
    return report, logs


# ------------------------------------------------------------------------------------------------ the cache

def _rescored_after(root: Path, name: str, change: Callable[[Path], Any],
                    setup: Callable[[], Callable[[], None] | None] | None = None, **kw: Any) -> tuple[str, str]:
    """``setup()``, score, rescore (must be cached), ``change(package)``, score again: rescored is right, cached is
    silent. Files ``setup`` writes are written here, so the edit ``change`` makes on purpose is not counted."""
    undo = setup() if setup else None
    try:
        with plugin(root / "site", name, "cache") as package:
            out = root / f"lb-{name}"
            board(root, out, [name], **kw)
            _, logs = board(root, out, [name], **kw)
            if not any(line.endswith(": cached") for line in logs):
                return "silent", f"not cached on an unchanged rerun: {logs[:2]}"
            later = change(package)
            forget(name)
            _, logs = board(root, out, [name], **kw)
            if callable(later):
                later()
    finally:
        if callable(undo):
            undo()
    why = next((line for line in logs if "rescored" in line), None)
    return _right(why is not None, why or f"served from the cache: {logs[:2]}")


def _edit_helper(package: Path) -> None:
    (package / "helper.py").write_text("FACTOR = -1.0\n", encoding="utf-8")


def _fake_library(root: Path) -> Callable[[], Callable[[], None]]:
    """A stand-in folder keyed as the installed ``dialeval`` package (its code a metric calls)."""
    def setup() -> Callable[[], None]:
        from dialeval.meta import cache_key

        fake = root / "fake-dialeval"
        fake.mkdir(exist_ok=True)
        (fake / "overlap.py").write_text("ORDER = 4\n", encoding="utf-8")
        real = cache_key.package_root
        cache_key.package_root = lambda m: fake if m == "dialeval" else real(m)
        return lambda: setattr(cache_key, "package_root", real)

    return setup


def _upgrade(package: Path) -> Callable[[], None]:
    from dialeval.meta import cache_key

    real = cache_key.installed_versions
    versions = {**real(), "numpy": "99.0"}
    cache_key.installed_versions = lambda: versions
    return lambda: setattr(cache_key, "installed_versions", real)


def _fifo_entry(root: Path, cli: Classify) -> tuple[str, str]:
    with plugin(root / "site", "cachef", "cache"):
        out = root / "lb-fifo"
        board(root, out, ["cachef"])
        entry = out / "cache" / "cachef__d__turn.json"
        entry.unlink()
        os.mkfifo(entry)
        return guarded(lambda: cli(["leaderboard", "--data", str(root / "d.jsonl"), "--metric", "cachef",
                                    "--resamples", "100", "--out", str(out)]), 30)


def _symlinked(root: Path, mine: Path, cli: Classify, what: str) -> tuple[str, str]:
    with plugin(root / "site", "cachel", "cache"):
        out = root / f"lb-link-{what}"
        out.mkdir()
        (out / ".dialeval-leaderboard").write_text("", encoding="utf-8")
        if what == "folder":
            (out / "cache").symlink_to(mine)
        else:
            (out / "cache").mkdir()
            (out / "cache" / "cachel__d__turn.json").symlink_to(mine / "cachel__d__turn.json")
        return cli(["leaderboard", "--data", str(root / "d.jsonl"), "--metric", "cachel", "--resamples", "100",
                    "--out", str(out)])


def _seconds_text(root: Path) -> tuple[str, str]:
    with plugin(root / "site", "caches", "cache"):
        out = root / "lb-seconds"
        data = items(root / "big.jsonl", 210)
        from dialeval.meta import leaderboard

        leaderboard.build(None, out, data=[data], metrics=["caches"], n_resamples=100, log=lambda _: None)
        part, whole = out / "cache" / "caches__big__turn.part0.json", out / "cache" / "caches__big__turn.json"
        whole.unlink()
        part.write_text(json.dumps({**json.loads(part.read_text(encoding="utf-8")), "seconds": "12"}),
                        encoding="utf-8")
        logs: list[str] = []
        leaderboard.build(None, out, data=[data], metrics=["caches"], n_resamples=100, log=logs.append)
    line = next((x for x in logs if "'seconds' is '12'" in x), None)
    return _right(line is not None, line or logs[:2])


def cache_attempts(root: Path, cli: Classify) -> list[Attempt]:
    mine = root / "mine"
    mine.mkdir(parents=True)
    (mine / "cachel__d__turn.json").write_text("the user's own file", encoding="utf-8")  # stamped: must survive
    items(root / "d.jsonl")
    model = root / "model"
    weights = {"metric_args": {"cachew": {"model": str(model)}}}
    edit_library = lambda p: (root / "fake-dialeval" / "overlap.py").write_text("ORDER = 2\n", encoding="utf-8")  # noqa: E731
    return [
        (CACHE, "a plugin's helper module edited", lambda: guarded(lambda: _rescored_after(root, "cacheh", _edit_helper))),
        (CACHE, "dialeval library code edited", lambda: guarded(lambda: _rescored_after(
            root, "cached", edit_library, _fake_library(root)))),
        (CACHE, "new weights in the same model=DIR", lambda: guarded(lambda: _rescored_after(
            root, "cachew", lambda p: (model / "w.txt").write_text("2.0", encoding="utf-8"),
            lambda: (model.mkdir(exist_ok=True), (model / "w.txt").write_text("1.0", encoding="utf-8")) and None,
            **weights))),
        (CACHE, "a library upgrade (numpy 99.0)", lambda: guarded(lambda: _rescored_after(root, "cacheu", _upgrade))),
        (CACHE, "a cache part whose seconds is text", lambda: guarded(lambda: _seconds_text(root))),
        (CACHE, "OUT/cache a symlink to a user folder", lambda: guarded(lambda: _symlinked(root, mine, cli, "folder"))),
        (CACHE, "a cache entry a symlink to a user file", lambda: guarded(lambda: _symlinked(root, mine, cli, "entry"))),
        (HANGS, "a FIFO in place of a cache entry", lambda: guarded(lambda: _fifo_entry(root, cli), 60)),
    ]

