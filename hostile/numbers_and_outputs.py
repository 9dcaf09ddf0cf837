"""Issue 36's and issue 33's (items 7, 9-11) categories for ``hostile/tally.py``: silent wrong numbers
(Vendi near q = 1 and at large q, incomplete encoder folders, repeated CSV headers, FED entries dropped by a
config), the output policy (existing output files, metric-argument paths as inputs, colliding outputs, argparse
abbreviations), the per-client limit behind a proxy, unbounded options, a full disk on a real 1 MB tmpfs (or, where
it cannot be mounted, a simulated ENOSPC: the category's name says which), huge integer literals, repeated JSON
keys, null/list records, labels outside ClassLabel, and NLI Diversity on a 1 MB response.

Each attempt returns ``(kind, detail)`` like the tally's own: ``one-line``, ``accepted`` (the right result, compared
with a value computed here by hand), ``crash`` or ``silent``.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import importlib
import json
import math
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Attempt = tuple[str, str, Callable[[], tuple[str, str]]]
Classify = Callable[..., tuple[str, str]]


def _right(ok: bool, detail: Any) -> tuple[str, str]:
    return ("accepted" if ok else "silent"), str(detail)[:160]


def _parse_exit(run_cli: Callable, argv: list[str]) -> tuple[str, str]:
    """An argparse refusal: ``SystemExit(2)`` with one line on stderr (the tally's runner counts it as a crash)."""
    import io

    from dialeval.cli import main

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main(argv)
    except SystemExit as exc:
        lines = err.getvalue().strip().splitlines()
        return ("one-line", lines[0][:160]) if exc.code == 2 and len(lines) == 1 else ("crash", err.getvalue()[-160:])
    return "silent", "accepted an abbreviated option"


# ------------------------------------------------------------------------------------------------ inputs

def _copy(src: str | Path, dst: Path, drop: tuple[str, ...] = ()) -> Path:
    shutil.copytree(src, dst, ignore=lambda d, names: [n for n in names if n in drop])
    return dst


def _encoder_folders(root: Path, models: dict[str, str]) -> dict[str, Path]:
    """Broken copies of the tiny models: no tokenizer files, a config that does not match the weights, NaN
    weights, a foreign tokenizer."""
    from safetensors.torch import load_file, save_file

    from dialeval.models.encoders import default_encoder_path
    from dialeval.models.folders import TOKENIZER_FILES

    out = {"no tokenizer files": _copy(models["encoder"], root / "bare", TOKENIZER_FILES + ("merges.txt",))}
    bad = _copy(models["lm"], root / "mismatch")
    cfg = json.loads((bad / "config.json").read_text(encoding="utf-8"))
    cfg["n_embd"] = cfg.get("n_embd", 32) * 2
    (bad / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    out["config not matching the weights"] = bad
    nan = _copy(models["lm"], root / "nan")
    tensors = load_file(nan / "model.safetensors")
    key = next(k for k, v in tensors.items() if v.is_floating_point())
    tensors[key] = tensors[key].clone().fill_(float("nan"))
    save_file(tensors, nan / "model.safetensors", metadata={"format": "pt"})
    out["NaN weights"] = nan
    foreign = _copy(models["lm"], root / "foreign", ("tokenizer.json", "vocab.json", "merges.txt",
                                                     "tokenizer_config.json", "special_tokens_map.json"))
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(default_encoder_path() / name, foreign / name)
    out["foreign tokenizer"] = foreign
    return out


def _edited(src: Path, dst: Path, name: str, edit: Callable[[str], str]) -> Path:
    dst.mkdir(parents=True)
    for p in src.iterdir():
        if p.is_file() and p.suffix in (".json", ".csv"):
            text = p.read_text(encoding="utf-8")
            (dst / p.name).write_text(edit(text) if p.name == name else text, encoding="utf-8")
    return dst


def _full_disk(root: Path) -> tuple[Path, str]:
    """A real 1 MB tmpfs (as root; unmounted at exit), else a plain folder and ``simulated`` (every write then
    fails by monkeypatching, see :func:`_simulated`)."""
    mount = root / "tmpfs"
    mount.mkdir()
    if os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                                            capture_output=True).returncode == 0:
        atexit.register(_unmount, mount)
        return mount, "real 1 MB tmpfs"
    return mount, "simulated ENOSPC"


def _unmount(mount: Path) -> None:
    """At exit (the tally has removed its temporary folder but for the busy mount point): unmount, then remove
    the mount point and the folders left empty above it."""
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)
    with contextlib.suppress(OSError):
        os.removedirs(mount)


def _fill(mount: Path, free: int) -> None:
    """Fill the tmpfs (written at run time, so not one of the tally's inputs) up to ``free`` bytes left."""
    filler = mount / ".filler"
    filler.unlink(missing_ok=True)
    with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as f:
        while True:
            f.write(b"\0" * 4096)
    with open(filler, "r+b") as f:
        f.truncate(max(0, filler.stat().st_size - free))


def _enospc(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@contextlib.contextmanager
def _simulated(how: str) -> Iterator[None]:
    """Where no tmpfs could be mounted, every write of the Arrow cache and of dialeval's atomic writers fails."""
    if how != "simulated ENOSPC":
        yield
        return
    from datasets.arrow_writer import ArrowWriter

    import dialeval.hub.repos as hub
    import dialeval.io.files as files

    def pip(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess(argv, 1, "", "OSError: [Errno 28] No space left on device\n")

    saved = (ArrowWriter.write, files._write_via_temp, hub.subprocess.run)
    ArrowWriter.write, files._write_via_temp, hub.subprocess.run = _enospc, _enospc, pip
    try:
        yield
    finally:
        ArrowWriter.write, files._write_via_temp, hub.subprocess.run = saved


# ------------------------------------------------------------------------------------------------ attempts

def _vendi(q: float) -> tuple[str, str]:
    from dialeval.similarity.vendi import compute_vendi

    value = compute_vendi([["alpha", "beta", "gamma", "delta", "omega"]], kernel="ngram", n=1, q=q)["vendi_score"]
    return _right(abs(value - 5.0) < 1e-9, f"q={q!r}: {value}")  # 5 orthogonal responses: 5 for every q


def _vendi_grid() -> tuple[str, str]:
    import numpy as np

    from dialeval.similarity.vendi import hill_number

    p = np.random.default_rng(3).dirichlet(np.full(9, 0.5))
    qs = sorted({*np.linspace(0, 3, 601).tolist(), *(1 + k * 2.0 ** -52 for k in range(-40, 41)),
                 *np.linspace(3, 1000, 100).tolist()})
    v = np.array([hill_number(p, q) for q in qs])
    ok = bool(np.all(np.diff(v) <= 1e-12 * v[:-1]) and v.min() >= 1 - 1e-12 and v.max() <= 9 * (1 + 1e-12))
    return _right(ok, f"{len(qs)} orders: {v.max():.6f} .. {v.min():.6f}")


def _rotating_forwarded() -> tuple[str, str]:
    from dialeval.ui.serving import client_id

    class Req:
        def __init__(self, forwarded: str) -> None:
            self.headers, self.client, self.session_hash = {"x-forwarded-for": forwarded}, None, "s"

    old = os.environ.get("SPACE_ID")
    os.environ["SPACE_ID"] = "org/demo"
    try:
        ids = {client_id(Req(f"198.51.100.{i}, 203.0.113.7")) for i in range(57)}
    finally:
        os.environ.pop("SPACE_ID") if old is None else os.environ.update(SPACE_ID=old)
    return _right(ids == {"203.0.113.7"}, f"57 rotated first hops → clients {sorted(ids)[:3]}")


def _availability(model: str) -> tuple[str, str]:
    from dialeval.ui.scoring import availability

    ok, reason = availability("nli_diversity", model)
    return ("silent", "accepted") if ok else (("one-line" if "\n" not in reason else "crash"), reason[:160])


def _nli_megabyte(model: str) -> tuple[str, str]:
    import dialeval

    words = "the tea was warm and the garden quiet".split()
    huge = " ".join(words[i % len(words)] for i in range(220_000))
    short = ["i like green tea", "the weather is cold today"]
    metric = dialeval.load("nli_diversity")
    start = time.monotonic()
    got = metric.compute(predictions=[[huge, *short]], model=model, backend="torch")["nli_diversity"]
    took = time.monotonic() - start
    want = metric.compute(predictions=[[huge[:20_000], *short]], model=model, backend="torch")["nli_diversity"]
    return _right(took < 30 and abs(got - want) < 1e-12, f"{len(huge):,} characters in {took:.1f} s: {got} vs {want}")


def round3_attempts(root: Path, data: Path, models: dict[str, str], cli: Classify, lib: Classify,
                    run_cli: Callable) -> list[Attempt]:
    """Every category of issue 36 and issue 33's items 7, 9-11 (inputs written under ``root``)."""
    root.mkdir(parents=True)
    enc = _encoder_folders(root / "encoders", models)
    txt = root / "r.txt"
    txt.write_text("a b\nc d\n", encoding="utf-8")
    sets = root / "sets.jsonl"
    sets.write_text('{"predictions": ["hello there", "how are you"]}\n', encoding="utf-8")
    out = root / "out"
    attempts: list[Attempt] = []

    def add(category: str, name: str, run: Callable[[], tuple[str, str]]) -> None:
        attempts.append((category, name, run))

    # 36.1 Vendi Score near q = 1 and at large q: the right value, 5
    for q in (float(__import__("numpy").arange(0.5, 1.6, 0.1)[5]), 1 + 2 ** -52, 1 - 1e-15, 1 + 1e-15, 1 - 2 ** -53,
              500.0, 750.0, 1000.0, math.inf, 0.0):
        add("36.1 vendi order q", f"5 disjoint responses, q={q!r}", lambda q=q: _vendi(q))
    add("36.1 vendi order q", "fine q grid: monotone, 1 ≤ VS ≤ n", _vendi_grid)

    # 36.2 encoder folders that are incomplete or do not match
    for what, folder in enc.items():
        add("36.2 encoder folders", f"sent_bert_diversity encoder with {what}",
            lambda f=folder: cli(["score", "--metric", "sent_bert_diversity", "--input", str(sets), "--metric-arg",
                                  f"encoder={f}"]))
        add("36.2 encoder folders", f"fit-space --encoder with {what}",
            lambda f=folder, w=what: cli(["fit-space", "--reference", str(txt), "--encoder", str(f), "--k", "2",
                                          "--out", str(out / f"fit-{w.split()[0]}")]))

    # 36.3 a repeated CSV header column (a flipped label_value)
    contest_src = data / "diversity_eval" / "with_metrics" / "conTest"
    flipped = _edited(contest_src, root / "contest", "con_test_200_with_hds_resp_gen.csv",
                      lambda t: "\n".join([ln + (",label_value" if i == 0 else ",0") for i, ln in
                                           enumerate(t.splitlines())]) + "\n")
    add("36.3 repeated CSV header", "datasets export contest, label_value twice",
        lambda: cli(["datasets", "export", "contest", "--config", "con_test_200_resp_gen", "--data-dir", str(flipped),
                     "--out", str(out / "contest"), "--cache-dir", str(root / "cache")]))

    # 36.4 / 33.9 / 33.10 FED, DailyDialog, DailyDialog++ JSON the readers used to drop or crash on
    fed = json.loads((data / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    fed_edits = {
        "null entry": json.dumps(fed[:10] + [None] + fed[10:]),
        "list entry": json.dumps(fed[:10] + [[1, 2]] + fed[10:]),
        "turn entry without response": json.dumps([{k: v for k, v in e.items() if k != "response"} if i == 4 else e
                                                   for i, e in enumerate(fed)]),
        "5,000-digit integer": json.dumps(fed).replace('"Interesting": [', '"Interesting": [' + "7" * 5000 + ", ", 1),
        "repeated key": json.dumps(fed).replace('"system": ', '"system": "Human", "system": ', 1),
    }
    for what, text in fed_edits.items():
        folder = root / "fed" / what.replace(" ", "-").replace(",", "")
        folder.mkdir(parents=True)
        (folder / "fed_data.json").write_text(text, encoding="utf-8")
        category = "36.4 FED turn entries" if "entr" in what else "33.9/33.10 JSON literals and keys"
        add(category, f"datasets export fed --config turn: {what}",
            lambda f=folder: cli(["datasets", "export", "fed", "--config", "turn", "--data-dir", str(f), "--out",
                                  str(out / "fed"), "--cache-dir", str(root / "cache")]))
        add(category, f"meta-eval fed --config turn: {what}",
            lambda f=folder: cli(["meta-eval", "fed", "--config", "turn", "--metric", "column:x", "--data-dir", str(f),
                                  "--cache-dir", str(root / "cache")]))
    dd_edits = [("dailydialog", "test.json", "repeated key", lambda t: t.replace('"topic": ', '"topic": "x", "topic": ', 1)),
                ("dailydialog", "test.json", "null dialogue", lambda t: "[null, " + t[1:]),
                ("dailydialog", "test.json", "list dialogue", lambda t: "[[1, 2], " + t[1:]),
                ("dailydialog_plusplus", "dev.json", "5,000-digit integer",
                 lambda t: t.replace('{"id": 0,', '{"id": ' + "1" * 5000 + ",", 1)),
                ("dailydialog_plusplus", "dev.json", "repeated key", lambda t: t.replace('{"id": 0,', '{"id": 0, "id": 0,', 1))]
    for i, (name, file, what, edit) in enumerate(dd_edits):
        folder = _edited(data / name, root / "dd" / str(i), file, edit)
        add("33.9/33.10 JSON literals and keys", f"datasets export {name}: {what}",
            lambda n=name, f=folder: cli(["datasets", "export", n, "--data-dir", str(f), "--out", str(out / "dd"),
                                          "--cache-dir", str(root / "cache"), "--allow-duplicates"]))

    # 33.10 labels outside the ClassLabel names (train-coherence reads DailyDialog as the builder does)
    for what, edit in (("act 'shouting'", lambda t: t.replace('"act": "directive"', '"act": "shouting"', 1)),
                       ("emotion 7", lambda t: t.replace('"emotion": "surprise"', '"emotion": 7', 1)),
                       ("topic 'gossip'", lambda t: t.replace('"topic": "politics"', '"topic": "gossip"', 1))):
        folder = _edited(data / "dailydialog", root / "labels" / what.split()[0], "test.json", edit)
        add("33.10 labels outside ClassLabel", f"train-coherence DailyDialog {what}",
            lambda f=folder: cli(["train-coherence", "--data", str(f), "--split", "test", "--encoder", "x", "--out",
                                  str(out / "clf")]))

    attempts += _output_attempts(root, data, txt, cli, run_cli)
    attempts += _report_attempts(root, cli)

    # 36.6 the per-client limit behind the Space's proxy
    add("36.6 per-client limit", "57 requests rotating the first X-Forwarded-For entry", _rotating_forwarded)

    # 36.7 unbounded options and odd outputs
    add("36.7 bounds and outputs", "meta-eval --resamples 10**8",
        lambda: cli(["meta-eval", "fed", "--metric", "column:x", "--data-dir", str(data / "fed"), "--resamples",
                     "100000000"]))
    add("36.7 bounds and outputs", "leaderboard --resamples 10**8",
        lambda: cli(["leaderboard", "--data-dir", str(data), "--out", str(out / "lb-big"), "--resamples", "100000000"]))
    add("36.7 bounds and outputs", "JSON output of NaN and inf",
        lambda: _right(importlib.import_module("dialeval.io.files").json_text([math.nan, math.inf], indent=None) == "[null, null]",
                       "strict JSON"))
    add("36.7 bounds and outputs", "/check_model with a 100,000-character name", lambda: _availability("x" * 100_000))
    add("36.7 bounds and outputs", "/check_model with a 300-byte folder name", lambda: _availability("a/" + "b" * 300))
    for host in ("not a host", "192.0.2.1", "a" * 300):
        add("36.7 bounds and outputs", f"demo --host {host[:20]!r}", lambda h=host: cli(["demo", "--host", h]))
    for cache in ("/proc/self", "/sys/kernel"):
        add("36.7 bounds and outputs", f"datasets export fed --cache-dir {cache}",
            lambda c=cache: cli(["datasets", "export", "fed", "--data-dir", str(data / "fed"), "--out",
                                 str(out / "fed-proc"), "--cache-dir", c]))

    attempts += _disk_full_attempts(root, data, models, cli)

    # 33.11 NLI Diversity on a 1 MB response
    add("33.11 NLI per-item bound", "1 MB response: bounded time, the same value", lambda: _nli_megabyte(models["model"]))
    return attempts


def _output_attempts(root: Path, data: Path, txt: Path, cli: Classify, run_cli: Callable) -> list[Attempt]:
    """36.5 / 33.7: existing output files, metric-argument paths as inputs, colliding outputs, abbreviations."""
    cat = "36.5/33.7 output policy"
    existing = root / "existing.json"
    existing.write_text("precious", encoding="utf-8")
    link = root / "link.json"
    link.symlink_to(existing)
    def folder(name: str, file: str, text: str) -> Path:
        (root / name).mkdir(parents=True)
        (root / name / file).write_text(text, encoding="utf-8")
        return root / name

    space, home = folder("space", "space.json", "{}"), folder("home", "space.json", "unrelated")
    encoder, lb = folder("enc-folder", "config.json", "{}"), folder("lb", "leaderboard.json", "{}")
    (lb / "cache").mkdir()
    via = root / "via-space"
    via.symlink_to(space)
    gold = root / "gold.jsonl"
    shutil.copy(Path(__file__).resolve().parents[1] / "datasets_scripts" / "cards" / "dialstory" / "sample" / "dialspk"
                / "test.jsonl", gold)
    fed = str(data / "fed")
    score = ["score", "--metric", "distinct_n", "--input", str(txt)]
    meta = ["meta-eval", "fed", "--metric", "column:x", "--data-dir", fed]
    t = str(root / "collide")

    def in_home(argv: list[str]) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            old = os.environ.get("HOME")
            os.environ["HOME"] = str(home)
            try:
                return cli(argv)
            finally:
                os.environ["HOME"] = old or ""

        return run

    cases: list[tuple[str, Callable[[], tuple[str, str]]]] = [
        ("score --output an existing file", lambda: cli([*score, "--output", str(existing)])),
        ("score --output a symlink to an existing file", lambda: cli([*score, "--output", str(link)])),
        ("meta-eval --out an existing file", lambda: cli([*meta, "--out", str(existing)])),
        ("meta-eval --plot an existing file", lambda: cli([*meta, "--plot", str(existing)])),
        ("dialspk-baseline --out an existing file", lambda: cli(["dialspk-baseline", "--data", str(gold), "--out",
                                                                  str(existing)])),
        ("score --output inside a --metric-arg space folder",
         lambda: cli(["score", "--metric", "sem_ent", "--input", str(txt), "--metric-arg", f"space={space}",
                      "--output", str(space / "r.json")])),
        ("score --output through a symlink into a --metric-arg folder",
         lambda: cli(["score", "--metric", "sem_ent", "--input", str(txt), "--metric-arg", f"space={space}",
                      "--output", str(via / "r.json")])),
        ("fit-space --out ~ holding an unrelated space.json",
         in_home(["fit-space", "--reference", str(txt), "--out", "~"])),
        ("fit-space --out a non-empty folder", lambda: cli(["fit-space", "--reference", str(txt), "--out", str(home)])),
        ("fit-space --out the --encoder folder", lambda: cli(["fit-space", "--reference", str(txt), "--encoder",
                                                               str(encoder), "--out", str(encoder)])),
        ("fit-space --out inside the --encoder folder", lambda: cli(["fit-space", "--reference", str(txt), "--encoder",
                                                                      str(encoder), "--out", str(encoder / "sp")])),
        ("meta-eval --out X --plot X", lambda: cli([*meta, "--out", f"{t}/x", "--plot", f"{t}/x"])),
        ("meta-eval --out - --plot -", lambda: cli([*meta, "--out", "-", "--plot", "-"])),
        ("meta-eval --out DIR --plot DIR/p.png", lambda: cli([*meta, "--out", t, "--plot", f"{t}/p.png"])),
        ("hub build --leaderboard lb --out lb/sub",
         lambda: cli(["hub", "build", "--org", "a", "--out", str(lb / "sub"), "--leaderboard", str(lb),
                      "--from-index", "--no-datasets"])),
        ("hub build --leaderboard lb --out lb/cache --overwrite",
         lambda: cli(["hub", "build", "--org", "a", "--out", str(lb / "cache"), "--leaderboard", str(lb),
                      "--from-index", "--no-datasets", "--overwrite"])),
        ("score --out (an abbreviation of --output)", lambda: _parse_exit(run_cli, [*score, "--out", f"{t}/a.json"])),
        ("meta-eval --data-d (an abbreviation of --data-dir)",
         lambda: _parse_exit(run_cli, ["meta-eval", "fed", "--metric", "column:x", "--data-d", fed])),
    ]
    return [(cat, name, run) for name, run in cases]


def _report_attempts(root: Path, cli: Classify) -> list[Attempt]:
    """33.8: ``hub build --leaderboard`` reads names from ``leaderboard.json`` that become paths: each hostile
    report is one line, and nothing is written outside ``--out``."""
    cat = "33.8 leaderboard reports as input"
    outside = root / "reports-outside" / "evil"
    bad = {"metric named by an absolute path": str(outside), "metric 5": 5, "metric null": None,
           "metric ../../escape": "../../escape", "metric a/b": "a/b", "dataset ../x": "../x"}
    attempts: list[Attempt] = []
    for i, (what, value) in enumerate([*bad.items(), ("a report that is not JSON", "{not json")]):
        board = root / "reports" / f"lb{i}"
        board.mkdir(parents=True)
        row = {"metric": "full_followup", "dataset": "fed", "config": "turn", "target": "annotation_means.Overall",
               "statistic": "spearman", "value": 0.3, "ci_low": 0.2, "ci_high": 0.4, "n": 375}
        row["dataset" if what.startswith("dataset") else "metric"] = value
        text = value if what.endswith("not JSON") else json.dumps(
            {"generator": "dialeval leaderboard", "rows": [row], "pairs": [], "skipped": [], "published": [],
             "bootstrap": {"confidence": 0.95}, "signature": "x"})
        (board / "leaderboard.json").write_text(text, encoding="utf-8")

        def run(b: Path = board, n: int = i) -> tuple[str, str]:
            outcome = cli(["hub", "build", "--org", "a", "--out", str(root / "reports" / f"hub{n}"), "--leaderboard",
                           str(b), "--from-index", "--no-datasets"])
            escaped = outside.parent.exists() or (root / "x.yaml").exists()
            return ("silent", f"wrote outside --out: {outcome[1]}") if escaped else outcome

        attempts.append((cat, f"hub build --leaderboard with {what}", run))
    return attempts


def _disk_full_attempts(root: Path, data: Path, models: dict[str, str], cli: Classify) -> list[Attempt]:
    """33.9: a full disk is one line, and a folder the command created is not left behind."""
    mount, how = _full_disk(root)
    cat = f"33.9 disk full ({how})"
    txt = root / "full-ref.txt"
    txt.write_text("\n".join(f"reference reply number {i} about tea" for i in range(24)) + "\n", encoding="utf-8")

    def full(argv: list[str], left: str | None, free: int) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            if how != "simulated ENOSPC":
                _fill(mount, free)
            with _simulated(how):
                kind, detail = cli(argv)
            if kind == "one-line" and left is not None and (mount / left).exists():
                return "silent", f"one line, but {left} was left behind"
            return kind, detail

        return run

    return [
        (cat, "datasets export dailydialog (Arrow cache written, 256 KB free)",
         full(["datasets", "export", "dailydialog", "--data-dir", str(data / "dailydialog"), "--out", str(mount / "dd"),
               "--cache-dir", str(mount / "cache"), "--allow-duplicates"], "dd", 256 << 10)),
        (cat, "meta-eval fed (Arrow cache written, 64 KB free)",
         full(["meta-eval", "fed", "--metric", "column:x", "--data-dir", str(data / "fed"), "--cache-dir",
               str(mount / "cache2")], None, 64 << 10)),
        (cat, "fit-space --out (16 KB free)",
         full(["fit-space", "--reference", str(txt), "--encoder", models["encoder"], "--k", "2", "--out",
               str(mount / "sp")], "sp", 16 << 10)),
        (cat, "leaderboard --out (no page free)",
         full(["leaderboard", "--data-dir", str(data), "--dataset", "contest", "--metric", "distinct_n", "--resamples",
               "100", "--max-rows", "contest=20", "--out", str(mount / "lb")], "lb", 0)),
        (cat, "hub build (wheel step, no page free)",
         full(["hub", "build", "--org", "a", "--out", str(mount / "hub"), "--no-datasets", "--only", "distinct_n"],
              "hub", 0)),
    ]
