"""Issue 21's closing tally: every bad input of the issue (and its neighbours) tried against the CLI and the library,
each classified as a one-line error, a crash (a traceback or an unexpected exception type) or a silent result
(exit 0 / no error where one is due); an input that may be accepted and was, with the right result, is ``accepted``.
Besides the issue's own cases, two generated families: every metric × option × bad value in the library and the CLI
(``option_values.py``), every command that reads a file × format × hostile content (``file_inputs.py``), and the
categories of issues 36 and 33 (``numbers_and_outputs.py``: a real 1 MB tmpfs for the full-disk cases when run as root),
and a fourth pass on own annotations, plugins, baselines and the score cache (``fourth_pass.py``; a call still running
after its bound counts as a ``hang``).
Inputs are written into a temporary folder; after each attempt their size and modification time are compared, and
their SHA-256 at the end; a changed input counts as a destroyed one.

    python hostile/tally.py [--data ../shared/data] [--verbose] [--only fourth]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "DIALEVAL_PROGRESS": "0",
       "GRADIO_ANALYTICS_ENABLED": "False"}
SAMPLE = Path(__file__).resolve().parents[1] / "datasets_scripts" / "cards" / "dialstory" / "sample"


def sums(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*")) if not p.is_symlink()}


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one in-process CLI call; an exception escaping ``main`` is a traceback."""
    from dialeval.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = main(argv)
    except BaseException as exc:  # noqa: BLE001 - a traceback is what we count
        return 99, out.getvalue(), f"{err.getvalue()}Traceback: {type(exc).__name__}: {exc}"
    return rc, out.getvalue(), err.getvalue()


def cli(argv: list[str]) -> tuple[str, str]:
    """("one-line" | "crash" | "silent", detail) for one CLI call that must be refused."""
    rc, _, err = run_cli(argv)
    if rc == 99:
        return "crash", err[-160:]
    lines = [line for line in err.splitlines() if line.startswith("dialeval ")]
    if rc == 2 and len(lines) == 1 and "Traceback" not in err:
        return "one-line", lines[0][:160]
    return ("silent" if rc == 0 else "crash"), f"rc={rc} {err[-160:]}"


def lib(call: Callable[[], Any]) -> tuple[str, str]:
    """The same for a library call that must raise ValueError/TypeError (one line)."""
    try:
        call()
    except (ValueError, TypeError) as exc:
        return ("one-line" if "\n" not in str(exc) else "crash"), str(exc)[:160]
    except BaseException as exc:  # noqa: BLE001
        return "crash", f"{type(exc).__name__}: {exc}"[:160]
    return "silent", "no error"


def _write_inputs(tmp: Path, data: Path) -> dict[str, Path]:
    """The bad inputs (and the inputs whose bytes must survive), written under ``tmp``."""
    fed = tmp / "fed"
    shutil.copytree(data / "fed", fed)
    txt = tmp / "r.txt"
    txt.write_text("a b\nc d\n", encoding="utf-8")
    exp = tmp / "EXP"
    (exp / "cfg").mkdir(parents=True)
    (exp / "README.md").write_text("# toy\n", encoding="utf-8")
    (exp / "cfg" / "test.jsonl").write_text('{"predictions": "a b"}\n{"predictions": "c d"}\n', encoding="utf-8")
    gold = tmp / "gold.jsonl"
    shutil.copy(SAMPLE / "dialspk" / "test.jsonl", gold)
    stories = tmp / "stories.jsonl"
    shutil.copy(SAMPLE / "raw" / "stories.jsonl", stories)
    foreign = tmp / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("precious", encoding="utf-8")
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    semi = tmp / "semi.csv"
    semi.write_text("id;response\n1;hello\n2;bye\n", encoding="utf-8")
    dup = tmp / "dup.jsonl"
    dup.write_text('{"id": 1, "r": "a"}\n{"id": 1, "r": "b"}\n', encoding="utf-8")
    nan, num, lst = (tmp / f"{k}.jsonl" for k in ("nan", "num", "lst"))
    nan.write_text('{"r": "a"}\n{"r": NaN}\n', encoding="utf-8")
    num.write_text('{"r": 5}\n', encoding="utf-8")
    lst.write_text('{"r": ["a"]}\n', encoding="utf-8")
    latin = tmp / "latin.jsonl"
    latin.write_bytes(b'{"id": "s", "story": "caf\xe9"}\n')
    upload = tmp / "multi.jsonl"
    upload.write_text('{"response": "one"}\n{"response": "two\\nlines"}\n', encoding="utf-8")
    surrogate = tmp / "sur.jsonl"
    surrogate.write_text('{"response": "a\\ud800b"}\n', encoding="utf-8")
    fed_dup = tmp / "fed_dup"
    fed_dup.mkdir()
    records = json.loads((data / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    (fed_dup / "fed_data.json").write_text(json.dumps(records + records[:1]), encoding="utf-8")
    story_dup = tmp / "story_dup.jsonl"
    story_dup.write_text(stories.read_text(encoding="utf-8") * 2, encoding="utf-8")
    pickled = tmp / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text('{"model_type": "gpt2"}', encoding="utf-8")
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")
    return {"fed": fed, "txt": txt, "exp": exp, "gold": gold, "stories": stories, "foreign": foreign, "fifo": fifo, "semi": semi, "dup": dup, "nan": nan, "num": num, "lst": lst, "latin": latin, "upload": upload, "surrogate": surrogate, "fed_dup": fed_dup, "story_dup": story_dup, "pickled": pickled}


def cases(tmp: Path, data: Path) -> list[tuple[str, Callable[[], tuple[str, str]]]]:
    import dialeval
    from dialeval.io.files import check_output_path
    from dialeval.models.lm import load_lm
    from dialeval.ui.inputs import UIInputs
    from dialeval.ui.scoring import run_metric
    from dialeval.ui.uploads import read_upload

    f = _write_inputs(tmp, data)
    fed, txt, exp, gold, stories, foreign, fifo, semi, dup, nan, num, lst, latin, upload, surrogate, fed_dup, \
        story_dup, pickled = (f[k] for k in ("fed", "txt", "exp", "gold", "stories", "foreign", "fifo", "semi", "dup",
                                             "nan", "num", "lst", "latin", "upload", "surrogate", "fed_dup",
                                             "story_dup", "pickled"))
    out = str(tmp / "out")
    score = ["score", "--metric", "distinct_n", "--input"]
    tc = ["train-coherence", "--data", str(SAMPLE), "--split", "test", "--encoder", "x", "--out", out]
    return [
        # data destroyed before (11 kinds)
        ("hub build --out . in a data folder", lambda: _in(fed, lambda: cli(["hub", "build", "--org", "a", "--out", ".",
                                                                           "--from-index", "--only", "fed"]))),
        ("hub build --out DATA", lambda: cli(["hub", "build", "--org", "a", "--out", str(fed), "--from-index",
                                              "--data-dir", str(tmp), "--only", "fed", "--overwrite"])),
        ("hub build --out DATA/..", lambda: cli(["hub", "build", "--org", "a", "--out", str(tmp), "--from-index",
                                                 "--data-dir", str(tmp), "--only", "fed", "--overwrite"])),
        ("score --output inside the input export", lambda: cli([*score, str(exp), "--output",
                                                               str(exp / "cfg" / "test.parquet")])),
        ("dialspk-baseline --out GOLD", lambda: cli(["dialspk-baseline", "--data", str(gold), "--out", str(gold)])),
        ("meta-eval --out DATA/file", lambda: cli(["meta-eval", "fed", "--metric", "column:x", "--data-dir", str(fed),
                                                    "--out", str(fed / "fed_data.json")])),
        ("dialstory-make --out STORY", lambda: cli(["datasets", "dialstory-make", "--input", str(stories), "--out",
                                                    str(stories)])),
        ("train-coherence --out FOREIGN", lambda: cli([*tc[:-1], str(foreign)])),
        ("datasets export --out DATA", lambda: cli(["datasets", "export", "fed", "--data-dir", str(fed), "--out",
                                                    str(fed), "--overwrite"])),
        ("score --output FIFO", lambda: cli([*score, str(txt), "--output", str(fifo)])),
        ("score --output /dev/null", lambda: lib(lambda: check_output_path("/dev/null"))),
        # bounded work
        ("library n=10**22", lambda: lib(lambda: dialeval.load("distinct_n").compute(predictions=["a"], n=10**22))),
        ("library n=10**9", lambda: lib(lambda: dialeval.load("ent_n").compute(predictions=["a"], n=10**9))),
        ("CLI n=10**22", lambda: cli([*score, str(txt), "--metric-arg", "n=99999999999999999999999"])),
        ("Space n=10**22", lambda: ("one-line", o.message) if (o := run_metric(
            "distinct_n", UIInputs(responses=["a b"]), options={"n": 10**22})).status == "error" else ("silent", "")),
        ("vocab_size=1", lambda: lib(lambda: dialeval.load("distinct_n").compute(predictions=["a b"], vocab_size=1))),
        ("vocab_size below distinct", lambda: lib(lambda: dialeval.load("distinct_n").compute(
            predictions=["a b c"], n=1, vocab_size=2))),
        ("base=1e-300", lambda: lib(lambda: dialeval.load("ent_n").compute(predictions=["a b"], base=1e-300))),
        ("batch_size=10**9", lambda: lib(lambda: dialeval.load("nli_diversity").compute(
            predictions=[["a", "b"]], batch_size=10**9))),
        ("--metric-config bogus", lambda: cli([*score, str(txt), "--metric-config", "bogus"])),
        ("compute(tokeniser=...)", lambda: lib(lambda: dialeval.load("distinct_n").compute(predictions=["a"],
                                                                                           tokeniser="char"))),
        # records
        ("upload with a multi-line record", lambda: lib(lambda: read_upload(upload))),
        ("semicolon CSV", lambda: cli([*score, str(semi)])),
        ("score duplicate ids", lambda: cli([*score, str(dup), "--field", "r"])),
        ("FED repeated record", lambda: cli(["datasets", "export", "fed", "--data-dir", str(fed_dup), "--out", out,
                                             "--cache-dir", str(tmp / "c")])),
        ("DailyDialog repeated dialogues", lambda: cli(["datasets", "export", "dailydialog", "--data-dir",
                                                        str(data / "dailydialog"), "--out", out, "--cache-dir",
                                                        str(tmp / "c")])),
        ("dialstory-make repeated id", lambda: cli(["datasets", "dialstory-make", "--input", str(story_dup),
                                                    "--out", out])),
        # crashes before
        ("upload lone surrogate", lambda: lib(lambda: read_upload(surrogate))),
        ("pickle-only model folder", lambda: lib(lambda: load_lm(str(pickled)))),
        ("undecodable JSONL", lambda: cli(["dialspk-baseline", "--data", str(latin)])),
        *[(f"train-coherence {o} 0", lambda o=o: cli([*tc, o, "0"])) for o in
          ("--batch-size", "--eval-every", "--max-length", "--epochs")],
        ("train-coherence --eval-split bogus", lambda: cli([*tc, "--eval-split", "bogus"])),
        # misleading messages
        ("NaN field", lambda: cli([*score, str(nan)])),
        ("int field", lambda: cli([*score, str(num)])),
        ("list field", lambda: cli([*score, str(lst)])),
        ("ent_n unknown option", lambda: lib(lambda: dialeval.load("ent_n").compute(predictions=["a"], bas=2))),
    ]


def _in(folder: Path, fn: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    old = os.getcwd()
    os.chdir(folder)
    try:
        return fn()
    finally:
        os.chdir(old)


def stamps(paths: list[Path]) -> dict[str, tuple[int, int]]:
    """(size, mtime in ns) of each input, cheap enough to take after every attempt."""
    out = {}
    for p in paths:
        try:
            st = p.stat()
            out[str(p)] = (st.st_size, st.st_mtime_ns)
        except OSError:
            out[str(p)] = (-1, -1)
    return out


def attempts(tmp: Path, data: Path, only: str | None = None) -> list[tuple[str, str, Callable[[], tuple[str, str]]]]:
    """The issue's cases, then the generated option values and file contents (``only``: the fourth pass alone)."""
    import file_inputs
    import fourth_messages
    import fourth_options
    import fourth_pass
    import newest_surfaces
    import numbers_and_outputs
    import option_values

    root = tmp / "fourth-inputs"  # the fourth pass: the cache, then the options, then the messages
    root.mkdir(parents=True, exist_ok=True)
    fourth = [*fourth_pass.cache_attempts(root / "cache", cli),
              *fourth_options.option_attempts(root / "options", cli, lib),
              *fourth_messages.message_attempts(root / "messages", cli, lib)]
    if only == "fourth":
        return fourth

    issue = [("issue cases", name, run) for name, run in cases(tmp, data)]
    models = option_values.tiny_models(tmp / "models")
    (tmp / "option-inputs").mkdir()
    options = option_values.option_attempts(tmp / "option-inputs", models, run_cli)
    files = file_inputs.file_attempts(tmp / "file-inputs", data, models, run_cli)
    round3 = numbers_and_outputs.round3_attempts(tmp / "round3-inputs", data, models, cli, lib, run_cli)
    newest = newest_surfaces.newest_attempts(tmp / "newest-inputs", cli, lib)
    return issue + options + files + round3 + newest + fourth


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
    parser.add_argument("--verbose", action="store_true", help="print every attempt (default: all but one-line errors)")
    parser.add_argument("--only", choices=["fourth"], default=None, help="run only the fourth pass's attempts")
    args = parser.parse_args()
    os.environ.update(ENV)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    tmp = Path(tempfile.mkdtemp(prefix="hostile-tally-"))
    kinds = ("one-line", "accepted", "unverified", "crash", "silent", "hang", "destroyed")
    try:
        table = attempts(tmp, Path(args.data).resolve(), args.only)
        inputs = [p for p in sorted(tmp.rglob("*")) if p.is_file() and not p.is_symlink()]
        first, before = sums(tmp), stamps(inputs)
        totals = dict.fromkeys(kinds, 0)
        per: dict[str, dict[str, int]] = {}
        for category, name, run in table:
            kind, detail = run()
            after = stamps(inputs)
            changed = [k for k, v in before.items() if after.get(k) != v]
            row = per.setdefault(category, dict.fromkeys(kinds, 0))
            for counter in (totals, row):
                counter[kind] += 1
                counter["destroyed"] += bool(changed)
            if args.verbose or kind not in ("one-line", "accepted", "unverified") or changed:
                print(f"{kind:9} {'DESTROYED ' + str(changed[:2]) if changed else ''}[{category}] {name}: {detail}")
            before = after
        last = sums(tmp)
        hashed = [k for k, v in first.items() if k in {str(p.relative_to(tmp)) for p in inputs} and last.get(k) != v]
        print(f"\n{'category':32} {'tried':>6} " + " ".join(f"{k:>9}" for k in kinds))
        for category, row in per.items():
            print(f"{category:32} {sum(row[k] for k in kinds[:6]):6} " + " ".join(f"{row[k]:9}" for k in kinds))
        print(f"\nbad inputs tried: {len(table)}; one-line errors: {totals['one-line']}; accepted with the right "
              f"result: {totals['accepted']}; accepted, not compared: {totals['unverified']}; crashes: "
              f"{totals['crash']}; silent results: {totals['silent']}; hangs: {totals['hang']}; "
              f"inputs changed: {totals['destroyed']} (SHA-256 of {len(inputs)} inputs before and after: "
              f"{len(hashed)} differ)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
