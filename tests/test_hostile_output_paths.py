"""Every command that writes outputs, given ``--out missing/../FOLDER`` (``missing`` absent, ``FOLDER`` a folder of
the user's files) and an input that fails: it exits 2 with one line, ``FOLDER`` is byte-for-byte unchanged, and
nothing new (no ``missing`` folder) appears beside it."""

import hashlib
import json
from pathlib import Path

import pytest

from dialeval.cli import main

OUT = "missing/../keep"


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a file's SHA-256, a folder's and a symlink's kind and target."""
    out = {}
    for p in sorted(root.rglob("*")):
        key = str(p.relative_to(root))
        if p.is_symlink():
            out[key] = "link:" + str(p.readlink())
        elif p.is_file():
            out[key] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[key] = "dir"
    return out


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working folder holding ``keep/`` (the user's files), an input that fails to read, an empty data folder."""
    keep = tmp_path / "keep"
    (keep / "inner").mkdir(parents=True)
    (keep / "notes.txt").write_text("the user's notes\n", encoding="utf-8")
    (keep / "inner" / "data.json").write_text(json.dumps({"a": 1}), encoding="utf-8")
    (tmp_path / "bad.jsonl").write_text('{"x": 1}\nnot json\n', encoding="utf-8")
    (tmp_path / "bad.txt").write_text("", encoding="utf-8")
    (tmp_path / "nodata").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


#: One failing call per command (and per output option) that writes outputs; ``{out}`` is the output path.
COMMANDS = {
    "score --output": ["score", "--metric", "distinct_n", "--input", "bad.jsonl", "--output", "{out}"],
    "fit-space --out": ["fit-space", "--reference", "bad.txt", "--out", "{out}"],
    "dress-weights --out": ["dress-weights", "--space", "nodata", "--train", "bad.txt", "--generated", "bad.txt",
                            "--out", "{out}"],
    "datasets export --out": ["datasets", "export", "fed", "--data-dir", "nodata", "--out", "{out}"],
    "dialstory-make --out": ["datasets", "dialstory-make", "--input", "bad.jsonl", "--out", "{out}"],
    "dialstory-make --dialspk-out": ["datasets", "dialstory-make", "--input", "bad.jsonl", "--out", "s.jsonl",
                                     "--dialspk-out", "{out}"],
    "meta-eval --out": ["meta-eval", "fed", "--metric", "column:x", "--data-dir", "nodata", "--out", "{out}"],
    "meta-eval --plot": ["meta-eval", "fed", "--metric", "column:x", "--data-dir", "nodata", "--out", "m.json",
                         "--plot", "{out}"],
    "train-coherence --out": ["train-coherence", "--data", "nodata", "--encoder", "x", "--out", "{out}"],
    "train-evaluator --out": ["train-evaluator", "--data-dir", "nodata", "--out", "{out}"],
    "dialspk-baseline --out": ["dialspk-baseline", "--data", "bad.jsonl", "--out", "{out}"],
    "hub build --out": ["hub", "build", "--org", "a", "--out", "{out}", "--from-index", "--data-dir", "nodata",
                        "--only", "fed"],
    "leaderboard --out": ["leaderboard", "--data-dir", "nodata", "--dataset", "contest", "--metric", "distinct_n",
                          "--out", "{out}"],
}


def test_every_output_command_is_listed():
    """The table above covers every sub-command option that names an output."""
    import argparse

    from dialeval.cli import build_parser
    from dialeval.io.files import is_output_option

    found = set()

    def walk(parser, prefix):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for sub in subs:
            for name, child in sub.choices.items():
                walk(child, [*prefix, name])
        if not subs:
            found.update(f"{prefix[-1]} {a.option_strings[0]}" for a in parser._actions
                         if is_output_option(a.dest) and a.nargs != 0)  # fit-space --plot is a flag

    walk(build_parser(), [])
    assert found == {" ".join(k.split()[-2:]) for k in COMMANDS}


@pytest.mark.parametrize("name", list(COMMANDS))
@pytest.mark.parametrize("target", ["keep", "fresh"])
def test_a_failing_command_leaves_the_folder_behind_dot_dot_untouched(workdir, capsys, name, target):
    before = snapshot(workdir)
    argv = [a.replace("{out}", f"missing/../{target}") for a in COMMANDS[name]]
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own refusals
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len([line for line in err.splitlines() if line.startswith("dialeval ")]) == 1, err
    assert "Traceback" not in err
    assert snapshot(workdir) == before  # keep/ byte for byte; no missing/, no fresh/, nothing else new
