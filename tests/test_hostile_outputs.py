"""Hostile outputs (issue 21): no command overwrites or deletes what it did not create. Each case asserts the
one-line message and that every input byte is unchanged (checksums of the whole tree before and after)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dialeval.cli import main
from dialeval.io.files import atomic_directory, check_output_path

SAMPLE = Path(__file__).resolve().parents[1] / "datasets_scripts" / "cards" / "dialstory" / "sample"


def tree_sums(root: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``root`` (or of ``root`` itself), plus the folder list."""
    root = Path(root)
    if root.is_file():
        return {".": hashlib.sha256(root.read_bytes()).hexdigest()}
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def one_error(capsys: pytest.CaptureFixture[str], rc: int) -> str:
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    lines = [line for line in err.splitlines() if line.startswith("dialeval ")]
    assert "Traceback" not in err and len(lines) == 1 and ": error: " in lines[0], err
    return lines[0]


@pytest.fixture
def fed_copy(shared_data, tmp_path):
    data = tmp_path / "fed"
    shutil.copytree(shared_data / "fed", data)
    return data


def test_hub_build_out_dot_inside_a_data_folder(fed_copy, capsys, monkeypatch):
    before = tree_sums(fed_copy)
    monkeypatch.chdir(fed_copy)
    err = one_error(capsys, main(["hub", "build", "--org", "acme", "--out", ".", "--from-index", "--only", "fed"]))
    assert "non-empty folder this command did not create" in err and "--overwrite" in err
    assert tree_sums(fed_copy) == before


@pytest.mark.parametrize("where", ["same", "parent"])
def test_hub_build_out_is_the_data_folder_or_its_parent(fed_copy, capsys, where):
    before = tree_sums(fed_copy.parent)
    out = fed_copy if where == "same" else fed_copy.parent
    err = one_error(capsys, main(["hub", "build", "--org", "acme", "--out", str(out), "--from-index",
                                  "--data-dir", str(fed_copy.parent), "--only", "fed", "--overwrite"]))
    assert ("lies inside the input" if where == "same" else "is the input") in err
    assert tree_sums(fed_copy.parent) == before


def test_hub_build_quotes_every_value_in_upload_sh(tmp_path, capsys):
    out = tmp_path / "x $(touch PWNED) ;rm -rf y"
    assert main(["hub", "build", "--org", "acme", "--out", str(out), "--from-index", "--only", "distinct_n"]) == 0
    script = (out / "upload.sh").read_text(encoding="utf-8")
    line = script.splitlines()[-1]
    assert shlex.split(line) == ["hf", "upload", "acme/distinct_n", str(out / "spaces" / "distinct_n"), ".",
                                 "--repo-type", "space"]
    # executed with a stub `hf` that records its arguments: no command substitution runs
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "hf").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$HF_ARGS"\n', encoding="utf-8")
    (bindir / "hf").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "HF_ARGS": str(tmp_path / "args")}
    subprocess.run(["bash", str(out / "upload.sh")], cwd=tmp_path, env=env, check=True, timeout=30)
    assert not (tmp_path / "PWNED").exists()
    assert (tmp_path / "args").read_text().splitlines()[2] == str(out / "spaces" / "distinct_n")


def _export_folder(root: Path) -> Path:
    exp = root / "EXP"
    (exp / "cfg").mkdir(parents=True)
    (exp / "README.md").write_text("---\nconfigs: []\n---\n# toy\n", encoding="utf-8")
    rows = [{"predictions": t} for t in ("a b c", "a b d", "e f g")]
    (exp / "cfg" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return exp


def test_score_output_inside_the_input_export_folder(tmp_path, capsys):
    exp = _export_folder(tmp_path)
    before = tree_sums(exp)
    for target in (exp / "cfg" / "test.jsonl", exp / "cfg" / "test.parquet", exp / "results.json"):
        err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(exp),
                                      "--output", str(target)]))
        assert "the input" in err and ("is the input" in err or "lies inside" in err)
        assert tree_sums(exp) == before


def test_score_output_onto_a_device_or_fifo(tmp_path, capsys):
    data = tmp_path / "r.txt"
    data.write_text("a b\nc d\n", encoding="utf-8")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(data), "--output", str(fifo)]))
    assert "not a regular file" in err
    assert fifo.exists() and not fifo.is_file()
    with pytest.raises(ValueError, match="not a regular file"):  # /dev/null as root would be replaced otherwise
        check_output_path("/dev/null")
    assert Path("/dev/null").is_char_device()


def test_score_output_dash_is_stdout_and_tilde_expands(tmp_path, capsys, monkeypatch):
    data = tmp_path / "r.txt"
    data.write_text("a b\na c\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["score", "--metric", "distinct_n", "--input", str(data), "--tokenizer", "whitespace",
                 "--output", "-"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["distinct_n"]["distinct_1"] == pytest.approx(3 / 4)  # a, b, c of 4 unigrams
    assert not (tmp_path / "-").exists()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert main(["score", "--metric", "distinct_n", "--input", str(data), "--output", "~/x.json"]) == 0
    assert (home / "x.json").is_file() and not (tmp_path / "~").exists()


def test_dress_weights_out_inside_the_space(tmp_path, capsys):
    from dialeval.semantic.space import SemanticSpace

    rng = np.random.default_rng(0)
    space = SemanticSpace.from_embeddings(rng.normal(size=(40, 8)).astype(np.float32), 3,
                                          texts=[f"t{i}" for i in range(40)], encoder_name="precomputed")
    d = space.save(tmp_path / "space")
    before = tree_sums(d)
    for target in (d / "space.json", d / "weights.jsonl"):
        err = one_error(capsys, main(["dress-weights", "--space", str(d), "--out", str(target)]))
        assert "the input" in err
    assert tree_sums(d) == before


def test_dialspk_baseline_out_onto_the_gold_file(tmp_path, capsys):
    gold = tmp_path / "test.jsonl"
    shutil.copy(SAMPLE / "dialspk" / "test.jsonl", gold)
    before = tree_sums(gold)
    err = one_error(capsys, main(["dialspk-baseline", "--data", str(gold), "--out", str(gold)]))
    assert "is the input" in err
    assert tree_sums(gold) == before


def test_dialstory_make_out_onto_a_story(tmp_path, capsys):
    stories = tmp_path / "stories"
    stories.mkdir()
    shutil.copy(SAMPLE / "raw" / "stories.jsonl", stories / "stories.jsonl")
    before = tree_sums(stories)
    for target in (stories / "stories.jsonl", stories / "out.jsonl"):
        err = one_error(capsys, main(["datasets", "dialstory-make", "--input", str(stories / "stories.jsonl"
                                      if target.name != "out.jsonl" else stories), "--out", str(target)]))
        assert "the input" in err
    assert tree_sums(stories) == before


def test_meta_eval_out_onto_a_data_file(fed_copy, capsys):
    before = tree_sums(fed_copy)
    err = one_error(capsys, main(["meta-eval", "fed", "--metric", "column:x", "--data-dir", str(fed_copy),
                                  "--out", str(fed_copy / "fed_data.json")]))
    assert "lies inside the input" in err
    assert tree_sums(fed_copy) == before


def test_data_env_folder_is_never_written(fed_copy, capsys, monkeypatch):
    monkeypatch.setenv("DIALEVAL_DATA_DIR", str(fed_copy.parent))
    before = tree_sums(fed_copy)
    err = one_error(capsys, main(["meta-eval", "fed", "--metric", "column:x", "--out",
                                  str(fed_copy / "fed_data.json")]))
    assert "DIALEVAL_DATA_DIR" not in err and "lies inside the input" in err
    assert tree_sums(fed_copy) == before


def test_train_coherence_out_an_existing_folder(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("precious", encoding="utf-8")
    before = tree_sums(out)
    err = one_error(capsys, main(["train-coherence", "--data", str(SAMPLE), "--encoder", "nonexistent-encoder",
                                  "--out", str(out)]))
    assert "non-empty folder this command did not create" in err and "--overwrite" in err
    assert tree_sums(out) == before


def test_export_out_the_data_folder_itself(fed_copy, capsys):
    before = tree_sums(fed_copy)
    err = one_error(capsys, main(["datasets", "export", "fed", "--data-dir", str(fed_copy), "--out",
                                  str(fed_copy), "--overwrite"]))
    assert "is the input" in err
    err = one_error(capsys, main(["datasets", "export", "fed", "--data-dir", str(fed_copy), "--out",
                                  str(fed_copy.parent), "--overwrite"]))
    assert "contains the input" in err
    assert tree_sums(fed_copy) == before


def test_atomic_directory_refuses_a_foreign_folder_in_the_python_api(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "keep.txt").write_text("precious", encoding="utf-8")
    with pytest.raises(FileExistsError, match="did not create"):
        with atomic_directory(out):
            pass
    assert (out / "keep.txt").read_text(encoding="utf-8") == "precious"
    with atomic_directory(out, owned=lambda p: (p / "keep.txt").is_file()) as tmp:
        (tmp / "new.txt").write_text("new", encoding="utf-8")
    assert sorted(os.listdir(out)) == ["new.txt"]


def test_sigterm_removes_the_temporary_folder(tmp_path):
    code = (
        "import os, signal, sys, time\n"
        "from dialeval.io.files import atomic_directory, remove_temporaries_on_sigterm\n"
        "remove_temporaries_on_sigterm()\n"
        f"with atomic_directory({str(tmp_path / 'out')!r}) as tmp:\n"
        "    (tmp / 'half.bin').write_bytes(b'x' * 1000)\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert any(p.name.startswith(".out.tmp-") for p in tmp_path.iterdir())
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    assert list(tmp_path.iterdir()) == []
