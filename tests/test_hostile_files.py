"""Hostile files: what a user sees for odd or broken inputs and outputs (issue 12, "Data and files")."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from dialeval.cli import main
from dialeval.datasets import MalformedDataError, export, load
from dialeval.datasets.contest import read_contest_csv
from dialeval.io.files import (
    atomic_directory,
    atomic_write_json,
    atomic_write_text,
    check_output_path,
)
from dialeval.io.readers import read_records, read_texts

CONTEST = ("diversity_eval", "with_metrics", "conTest", "con_test_200_with_hds_resp_gen.csv")


def _one_error_line(capsys: pytest.CaptureFixture[str], rc: int) -> str:
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    lines = [line for line in err.splitlines() if line.startswith("dialeval ")]  # not progress bars
    assert "Traceback" not in err and len(lines) == 1 and ": error: " in lines[0], err
    return lines[0]


# ----------------------------------------------------------------------------------------------
# Parsing: CSV as a stream, BOM, JSONL and text split on \n only
# ----------------------------------------------------------------------------------------------

def test_csv_quoted_multiline_field_and_bom(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(b'\xef\xbb\xbfresponse,id\n"first line\nsecond line",1\n"say ""hi""",2\n')
    assert read_records(path) == [{"response": "first line\nsecond line", "id": "1"},
                                  {"response": 'say "hi"', "id": "2"}]
    assert read_texts(path, "response") == ["first line\nsecond line", 'say "hi"']


def test_csv_unterminated_quote_is_an_error_not_merged_rows(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('response,id\n"never closed,1\nnext,2\nlast,3\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"r\.csv, line \d+: malformed CSV: a quoted cell is never closed"):
        read_texts(path, "response")


def test_csv_cell_over_the_csv_modules_limit(tmp_path):
    path = tmp_path / "big.csv"
    big = "word " * 60_000  # 300,000 characters: over csv's default 131,072
    path.write_text(f'response\n"{big}"\n', encoding="utf-8")
    assert read_texts(path, "response") == [big]


def test_ragged_csv_without_field_names_the_line(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("a,b\nx,y\n1,2,3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"ragged\.csv, line 3: 3 cells, but the header has 2 columns"):
        read_texts(path)


def test_jsonl_unicode_line_separators_are_text(tmp_path):
    path = tmp_path / "r.jsonl"
    rows = [{"r": "a\u2028b"}, {"r": "c\x85d"}, {"r": "e\x0cf"}]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    assert read_texts(path) == ["a\u2028b", "c\x85d", "e\x0cf"]


def test_text_file_splits_on_newlines_only(tmp_path):
    path = tmp_path / "r.txt"
    path.write_bytes("one\x0cstill one\r\ntwo\u2028half\nthree\n".encode())
    assert read_texts(path) == ["one\x0cstill one", "two\u2028half", "three"]


def test_deep_json_and_lone_surrogate_are_one_line_errors(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50_000 + "]" * 50_000, encoding="utf-8")
    err = _one_error_line(capsys, main(["score", "--metric", "distinct_n", "--input", str(deep)]))
    assert "nested too deeply" in err
    lone = tmp_path / "lone.jsonl"
    lone.write_text('{"r": "ok"}\n{"r": "bad \\ud83d end"}\n', encoding="utf-8")
    err = _one_error_line(capsys, main(["score", "--metric", "distinct_n", "--input", str(lone)]))
    assert "record 2" in err and "lone surrogate" in err


def test_contest_builder_reads_bom_and_multiline_cells(shared_data, tmp_path):
    src = shared_data.joinpath(*CONTEST)
    with open(src, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    rows[1][rows[0].index("resp_0")] = "a response\nover two lines"
    path = tmp_path / "bom.csv"
    with open(path, "w", encoding="utf-8-sig", newline="") as f:
        csv.writer(f).writerows(rows)
    parsed = read_contest_csv(path)
    assert len(parsed) == len(rows) - 1
    assert parsed[0]["responses"][0] == "a response\nover two lines"
    assert parsed[0]["sample_id"] == rows[1][rows[0].index("sample_id")]


# ----------------------------------------------------------------------------------------------
# Duplicated ids, out-of-range numbers
# ----------------------------------------------------------------------------------------------

def test_duplicated_ids_are_refused_unless_allowed(shared_data, tmp_path):
    lines = shared_data.joinpath(*CONTEST).read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "dup.csv"
    path.write_text("".join(lines + lines[1:3]), encoding="utf-8")  # two rows repeated
    with pytest.raises(MalformedDataError, match=r"duplicated rows \(sample_id/label_value/responses: test: 2 repeated id"):
        load("contest", data_files={"test": str(path)}, cache_dir=tmp_path / "c")
    ds = load("contest", data_files={"test": str(path)}, cache_dir=tmp_path / "c", allow_duplicates=True)
    assert ds["test"].num_rows == len(lines) - 1 + 2


def test_duplicated_ids_refused_by_export_cli_with_escape(shared_data, tmp_path, capsys):
    data = tmp_path / "dd"
    shutil.copytree(shared_data / "dailydialog_plusplus", data)
    for p in data.iterdir():
        p.chmod(0o644)
    dev = data / "dev.json"
    lines = dev.read_text(encoding="utf-8").splitlines()
    dev.write_text("\n".join(lines + lines[:1]) + "\n", encoding="utf-8")
    args = ["datasets", "export", "dailydialog_plusplus", "--data-dir", str(data), "--config", "default",
            "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")]
    err = _one_error_line(capsys, main(args))
    assert "duplicated rows (id" in err and "--allow-duplicates" in err
    assert not (tmp_path / "out").exists()
    assert main(args + ["--allow-duplicates"]) == 0
    assert (tmp_path / "out" / "README.md").is_file()


def test_out_of_range_integer_in_a_dataset_file(shared_data, tmp_path):
    data = tmp_path / "dd"
    data.mkdir()
    for name in ("dev.json", "test.json"):
        shutil.copyfile(shared_data / "dailydialog_plusplus" / name, data / name)
    lines = (data / "dev.json").read_text(encoding="utf-8").splitlines(keepends=True)
    obj = json.loads(lines[1])
    obj["id"] = 10**30
    lines[1] = json.dumps(obj) + "\n"
    (data / "dev.json").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"dev\.json, line 2: field 'id' is 1000.* out of range"):
        load("dailydialog_plusplus", "default", data_dir=data, cache_dir=tmp_path / "c")


# ----------------------------------------------------------------------------------------------
# Writing: atomic files and folders, outputs that would destroy an input
# ----------------------------------------------------------------------------------------------

def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "out.json"
    atomic_write_json(path, {"v": 1})

    class Boom:  # json.dumps fails half-way through the object
        pass

    with pytest.raises(TypeError):
        atomic_write_json(path, {"v": 2, "x": Boom()})
    assert json.loads(path.read_text(encoding="utf-8")) == {"v": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary file left


def test_atomic_directory_leaves_nothing_when_interrupted(tmp_path):
    target = tmp_path / "export"
    with pytest.raises(KeyboardInterrupt):
        with atomic_directory(target) as tmp:
            atomic_write_text(tmp / "train.jsonl", "{}\n")
            raise KeyboardInterrupt  # killed before the card
    assert not target.exists() and list(tmp_path.iterdir()) == []
    with atomic_directory(target) as tmp:
        atomic_write_text(tmp / "README.md", "card")
    assert (target / "README.md").read_text(encoding="utf-8") == "card"


def test_interrupted_export_leaves_no_loadable_folder(shared_data, tmp_path, monkeypatch):
    import datasets

    import dialeval.datasets as dd

    out = tmp_path / "export"
    calls = {"n": 0}
    real = dd._write_jsonl

    def dies_on_second_split(ds, path):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        real(ds, path)

    monkeypatch.setattr(dd, "_write_jsonl", dies_on_second_split)
    with pytest.raises(KeyboardInterrupt):
        export("dailydialog_plusplus", out, data_dir=shared_data / "dailydialog_plusplus", configs=["default"],
               file_format="jsonl", cache_dir=tmp_path / "c")
    assert not out.exists()
    with pytest.raises(FileNotFoundError):
        datasets.load_dataset(str(out), "default")
    monkeypatch.setattr(dd, "_write_jsonl", real)
    counts = export("dailydialog_plusplus", out, data_dir=shared_data / "dailydialog_plusplus",
                    configs=["default"], file_format="jsonl", cache_dir=tmp_path / "c")
    loaded = datasets.load_dataset(str(out), "default", cache_dir=str(tmp_path / "hf"))
    assert {s: loaded[s].num_rows for s in loaded} == counts["default"]


def test_export_refuses_a_folder_that_is_not_an_export(shared_data, tmp_path, capsys):
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("precious", encoding="utf-8")
    err = _one_error_line(capsys, main(["datasets", "export", "fed", "--data-dir", str(shared_data / "fed"),
                                        "--out", str(keep)]))
    assert "non-empty folder this command did not create" in err and "--overwrite" in err
    assert (keep / "notes.txt").read_text(encoding="utf-8") == "precious"


def test_output_equal_to_input_is_refused(tmp_path, capsys):
    path = tmp_path / "r.txt"
    path.write_text("hello there\ngeneral kenobi\n", encoding="utf-8")
    for spelling in (str(path), str(tmp_path / "." / "r.txt"), str(tmp_path) + "//r.txt"):
        err = _one_error_line(capsys, main(["score", "--metric", "distinct_n", "--input", str(path),
                                            "--output", spelling]))
        assert "is the input" in err
    assert path.read_text(encoding="utf-8") == "hello there\ngeneral kenobi\n"


def test_output_that_is_a_directory_or_unwritable(tmp_path, capsys):
    path = tmp_path / "r.txt"
    path.write_text("hello there\n", encoding="utf-8")
    err = _one_error_line(capsys, main(["score", "--metric", "distinct_n", "--input", str(path),
                                        "--output", str(tmp_path)]))
    assert "is a directory" in err
    blocker = tmp_path / "afile"
    blocker.write_text("x", encoding="utf-8")
    err = _one_error_line(capsys, main(["score", "--metric", "distinct_n", "--input", str(path),
                                        "--output", str(blocker / "out.json")]))
    assert "cannot be written" in err and "not a folder" in err


def test_score_output_is_written_whole(tmp_path, capsys):
    path = tmp_path / "r.txt"
    path.write_text("hello there\ngeneral kenobi\n", encoding="utf-8")
    out = tmp_path / "res" / "out.json"
    assert main(["score", "--metric", "distinct_n", "--input", str(path), "--output", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["distinct_n"]["distinct_1"] == 1.0
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.json"]


def test_fit_space_out_is_checked_before_the_fit(tmp_path, capsys, monkeypatch):
    from dialeval.semantic.space import SemanticSpace

    def no_fit(*args, **kwargs):
        raise AssertionError("the fit ran although --out was unusable")

    monkeypatch.setattr(SemanticSpace, "fit", classmethod(no_fit))
    ref = tmp_path / "ref.txt"
    ref.write_text("a\nb\n", encoding="utf-8")
    existing = tmp_path / "space.bin"
    existing.write_text("x", encoding="utf-8")
    err = _one_error_line(capsys, main(["fit-space", "--reference", str(ref), "--out", str(existing)]))
    assert "is an existing file" in err
    err = _one_error_line(capsys, main(["fit-space", "--reference", str(ref), "--out", str(ref)]))
    assert "is the input" in err


def test_check_output_path_accepts_new_paths(tmp_path):
    assert check_output_path(tmp_path / "new" / "deep" / "out.json") == tmp_path / "new" / "deep" / "out.json"
    assert check_output_path(tmp_path / "newdir", kind="dir") == tmp_path / "newdir"


# ----------------------------------------------------------------------------------------------
# Broken semantic spaces
# ----------------------------------------------------------------------------------------------

def _saved_space(tmp_path: Path) -> Path:
    import numpy as np

    from dialeval.semantic.space import SemanticSpace

    rng = np.random.default_rng(0)
    space = SemanticSpace.from_embeddings(rng.normal(size=(40, 8)).astype(np.float32), 3,
                                          texts=[f"t{i}" for i in range(40)], encoder_name="precomputed")
    return space.save(tmp_path / "space")


def test_truncated_or_foreign_space_files(tmp_path, capsys):
    from dialeval.semantic.space import SemanticSpace

    d = _saved_space(tmp_path)
    assert sorted(p.name for p in d.iterdir()) == ["space.json", "space.safetensors"]
    arrays = d / "space.safetensors"
    arrays.write_bytes(arrays.read_bytes()[:100])
    with pytest.raises(ValueError, match="not a readable safetensors file .*truncated"):
        SemanticSpace.load(d)
    arrays.write_bytes(b"PK\x03\x04 this is a zip, not safetensors")
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        SemanticSpace.load(d)
    (d / "space.json").write_text("[1, 2, 3]", encoding="utf-8")
    with pytest.raises(ValueError, match="not a dialeval semantic space"):
        SemanticSpace.load(d)
    texts = tmp_path / "p.txt"
    texts.write_text("hello\n", encoding="utf-8")
    err = _one_error_line(capsys, main(["score", "--metric", "sem_ent", "--input", str(texts),
                                        "--metric-arg", f"space={d}"]))
    assert "not a dialeval semantic space" in err


def test_dress_weights_out_refuses_the_space_folder(tmp_path, capsys):
    d = _saved_space(tmp_path)
    err = _one_error_line(capsys, main(["dress-weights", "--space", str(d), "--out", str(d)]))
    assert "is the input" in err
    assert sorted(os.listdir(d)) == ["space.json", "space.safetensors"]
