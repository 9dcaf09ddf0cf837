"""Records stay records (issue 21): an upload never splits a record on a line break, duplicates are refused
unless allowed, a semicolon CSV is refused, and every broken file is one line naming the file and the fix."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from test_hostile_outputs import SAMPLE, one_error, tree_sums

from dialeval.cli import main
from dialeval.datasets import MalformedDataError, load
from dialeval.datasets.contest import read_contest_csv
from dialeval.ui.inputs import InputError, UIInputs
from dialeval.ui.scoring import run_metric
from dialeval.ui.uploads import read_upload

CONTEST = ("diversity_eval", "with_metrics", "conTest", "con_test_200_with_hds_resp_gen.csv")


# ---------------------------------------------------------------------------------------------- demo uploads

@pytest.mark.parametrize(("name", "content", "where"), [
    ("r.jsonl", '{"response": "one"}\n{"response": "two\\nlines"}\n{"response": "three"}\n',
     "r.jsonl, record 2, field 'response'"),
    ("r.csv", 'response\none\n"two\nlines"\nthree\n', "r.csv, record 2, field 'response'"),
    ("r.json", '["one", "two\\r\\nlines"]', "r.json, record 2"),
    ("s.jsonl", '{"responses": ["a", "b\\nc", "d"]}\n', "s.jsonl, record 1, field 'responses', item 2"),
])
def test_upload_refuses_a_record_that_spans_lines(tmp_path, name, content, where):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match="spans several lines") as info:
        read_upload(path)
    assert str(info.value).startswith(where) and "\n" not in str(info.value)


def test_upload_count_is_what_is_scored(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"response": t}) + "\n" for t in ("a b", "a c", "a b")), encoding="utf-8")
    upload = read_upload(path)
    assert upload.summary() == "3 responses"
    outcome = run_metric("distinct_n", UIInputs.from_text(responses="\n".join(upload.responses)),
                         options={"n": [1]})
    assert main(["score", "--metric", "distinct_n", "--input", str(path), "--metric-arg", "n=[1]", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["distinct_n"]
    assert outcome.result["distinct_1"] == cli["distinct_1"] == pytest.approx(3 / 6)  # a, b, c of 6 tokens


# ---------------------------------------------------------------------------------------------- CSV shape

def test_semicolon_csv_is_refused_not_scored_as_one_column(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("id;response\n1;hello there\n2;bye now\n", encoding="utf-8")
    before = tree_sums(path)
    err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(path)]))
    assert "one column holding semicolons; the file looks semicolon-separated" in err
    assert tree_sums(path) == before


def test_csv_errors_name_the_line_a_record_starts_on(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text('response,id\n"two\nlines",1\nshort\n', encoding="utf-8")
    err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(path)]))
    assert "r.csv, line 4: 1 cells" in err  # the header is line 1, the two-line record lines 2-3


def test_contest_short_row_names_its_record_line_and_counts_its_cells(shared_data, tmp_path):
    header = shared_data.joinpath(*CONTEST).read_text(encoding="utf-8").splitlines()[0]
    n = len(header.split(","))
    path = tmp_path / "c.csv"
    path.write_text(header + "\n" + ",".join(["x"] * (n - 1)) + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=rf"row 1 \(line 2\): has {n - 1} cells for {n} columns"):
        read_contest_csv(path)


# ---------------------------------------------------------------------------------------------- duplicates

def test_score_refuses_repeated_ids_and_rows(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    rows = [{"id": 1, "response": "a b"}, {"id": 2, "response": "c d"}, {"id": 1, "response": "e f"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(path), "--field", "response"]))
    assert "record 3: id 1 repeats record 1" in err and "--allow-duplicates" in err
    rows = [{"context": "hi", "response": "a b"}, {"context": "hi", "response": "a b"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(path), "--field", "response"]))
    assert "record 2: an exact duplicate of record 1" in err
    assert main(["score", "--metric", "distinct_n", "--input", str(path), "--field", "response",
                 "--allow-duplicates", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["distinct_n"]["distinct_1"] == pytest.approx(2 / 4)
    # plain responses may repeat: repetition is what Dist-n measures
    text = tmp_path / "r.txt"
    text.write_text("a b\na b\n", encoding="utf-8")
    assert main(["score", "--metric", "distinct_n", "--input", str(text), "--json"]) == 0


def test_fed_builder_refuses_a_repeated_record(shared_data, tmp_path, capsys):
    data = json.loads((shared_data / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    folder = tmp_path / "fed"
    folder.mkdir()
    (folder / "fed_data.json").write_text(json.dumps(data + data[:1]), encoding="utf-8")
    before = tree_sums(folder)
    err = one_error(capsys, main(["datasets", "export", "fed", "--data-dir", str(folder), "--out",
                                  str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")]))
    assert f"id {len(data)} repeats id 0" in err and "--allow-duplicates" in err
    assert tree_sums(folder) == before and not (tmp_path / "out").exists()
    assert main(["datasets", "export", "fed", "--data-dir", str(folder), "--out", str(tmp_path / "out"),
                 "--cache-dir", str(tmp_path / "c"), "--allow-duplicates"]) == 0


def test_dialstory_make_refuses_a_repeated_id(tmp_path, capsys):
    lines = (SAMPLE / "raw" / "stories.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "stories.jsonl"
    path.write_text("\n".join(lines + lines[:1]) + "\n", encoding="utf-8")
    err = one_error(capsys, main(["datasets", "dialstory-make", "--input", str(path), "--out",
                                  str(tmp_path / "out.jsonl")]))
    assert f"line {len(lines) + 1}: id 'story-001' repeats line 1" in err
    assert not (tmp_path / "out.jsonl").exists()


# ---------------------------------------------------------------------------------------------- crashes → one line

def test_lone_surrogate_in_a_dataset_file(tmp_path, capsys):
    data = tmp_path / "ds"
    shutil.copytree(SAMPLE, data)
    path = data / "dialgen" / "test.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"story": "', '"story": "\\ud83d', 1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = tree_sums(data)
    err = one_error(capsys, main(["datasets", "export", "dialstory", "--data-dir", str(data), "--out",
                                  str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")]))
    assert "test.jsonl, line 1: field 'story' holds a lone surrogate (U+D83D)" in err
    assert tree_sums(data) == before


def test_undecodable_files_name_the_file(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "gold.jsonl"
    bad.write_bytes(b'{"id": "s", "story": "caf\xe9"}\n')
    err = one_error(capsys, main(["dialspk-baseline", "--data", str(bad)]))
    assert "gold.jsonl, line 1: not UTF-8 text" in err
    fed = tmp_path / "fed"
    fed.mkdir()
    (fed / "fed_data.json").write_bytes(b'[{"x": "caf\xe9"}]')
    err = one_error(capsys, main(["datasets", "export", "fed", "--data-dir", str(fed), "--out",
                                  str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")]))
    assert "fed_data.json: not UTF-8 text" in err
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"caf\xe9\n"), encoding="utf-8",
                                                      errors="surrogateescape"))
    err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", "-"]))
    assert "<stdin>: not UTF-8 text" in err


@pytest.mark.parametrize(("value", "what"), [("NaN", "NaN (a missing value)"), ("5", "int"), ('["a"]', "a list")])
def test_non_text_field_says_what_it_is(tmp_path, capsys, value, what):
    path = tmp_path / "r.jsonl"
    path.write_text(f'{{"response": {value}}}\n{{"response": "b"}}\n', encoding="utf-8")
    err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(path)]))
    assert f"'response' is {what}" in err and "responses must be strings" in err


def test_nan_in_a_later_record(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    path.write_text('{"response": "a"}\n{"response": NaN}\n', encoding="utf-8")
    err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(path)]))
    assert "record 2: field 'response' (predictions) is NaN (a missing value)" in err


def test_real_dailydialog_repeats_are_named(shared_data, tmp_path):
    with pytest.raises(MalformedDataError, match="dialogue_id 962 repeats dialogue_id 709"):
        load("dailydialog", data_dir=shared_data / "dailydialog", cache_dir=tmp_path / "c")



def test_upload_with_a_lone_surrogate_is_one_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"response": "a\\ud800b"}\n{"response": "ok"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"r.jsonl, record 1, field 'response' holds a lone surrogate \(U\+D800\)"):
        read_upload(path)


# ---------------------------------------------------------------------------------------------- issue 21's generated tally

def test_text_file_of_blank_lines_is_refused_not_scored_zero(tmp_path, capsys):
    path = tmp_path / "r.txt"
    path.write_bytes(b"\n \n\t\n")
    err = one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(path)]))
    assert f"{path}: the file holds only blank lines; write one response per line." in err
    assert path.read_bytes() == b"\n \n\t\n"
    path.write_bytes(b"a b\n\nc\n")  # a blank line among responses is an empty response: Dist-1 = 3 of 3
    assert main(["score", "--metric", "distinct_n", "--input", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["distinct_n"]["distinct_1"] == 1.0


def test_upload_refuses_repeated_ids_but_not_repeated_set_members(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a", "response": "hi"}\n{"id": "b", "response": "yo"}\n{"id": "a", "response": "hey"}\n',
                    encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(InputError) as info:
        read_upload(path)
    assert str(info.value) == "r.jsonl, record 3: id 'a' repeats record 1; remove one."
    assert path.read_bytes() == before
    members = tmp_path / "s.jsonl"  # the same reply twice in one set is what diversity measures
    members.write_text('{"set_id": 1, "response": "yes"}\n{"set_id": 1, "response": "yes"}\n'
                       '{"set_id": 2, "response": "no"}\n', encoding="utf-8")
    assert read_upload(members).sets == [["yes", "yes"], ["no"]]


def test_fit_space_refuses_repeated_reference_ids(tmp_path, capsys):
    path = tmp_path / "refs.jsonl"
    path.write_text('{"id": 1, "response": "a"}\n{"id": 2, "response": "b"}\n{"id": 1, "response": "c"}\n',
                    encoding="utf-8")
    before = path.read_bytes()
    err = one_error(capsys, main(["fit-space", "--reference", str(path), "--field", "response", "--encoder",
                                  str(tmp_path / "no-encoder"), "--k", "2", "--out", str(tmp_path / "space")]))
    assert f"{path}, record 3: id 1 repeats record 1; remove one." in err
    assert path.read_bytes() == before and not (tmp_path / "space").exists()


def test_dialspk_baseline_refuses_repeated_and_missing_stories(tmp_path, capsys):
    lines = (SAMPLE / "dialspk" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join(lines + lines[:1]) + "\n", encoding="utf-8")
    before = path.read_bytes()
    err = one_error(capsys, main(["dialspk-baseline", "--data", str(path)]))
    assert f"{path}, record {len(lines) + 1}: an exact duplicate of record 1; remove it." in err
    assert path.read_bytes() == before
    path.write_text("\n".join([*lines, lines[1].replace('"story-002"', '"story-001"')]) + "\n", encoding="utf-8")
    err = one_error(capsys, main(["dialspk-baseline", "--data", str(path)]))
    assert f"record {len(lines) + 1}: id 'story-001' repeats record 1; remove one." in err
    path.write_bytes(b"")
    err = one_error(capsys, main(["dialspk-baseline", "--data", str(path)]))
    assert "no stories (the file is empty)" in err
    path.write_bytes(before)


def test_dialstory_make_refuses_an_empty_input(tmp_path, capsys):
    path = tmp_path / "stories.jsonl"
    path.write_bytes(b"\n\n")
    err = one_error(capsys, main(["datasets", "dialstory-make", "--input", str(path), "--out",
                                  str(tmp_path / "out.jsonl")]))
    assert f'{path}: no stories (the file is empty); write one {{"id", "story"}} object per line.' in err
    assert not (tmp_path / "out.jsonl").exists() and path.read_bytes() == b"\n\n"
