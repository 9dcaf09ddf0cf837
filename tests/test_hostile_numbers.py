"""Issue 36 (items 1-4) and issue 33 (items 9-11): silent wrong numbers and readers that dropped or crashed on records.
Every test here failed before its fix."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dialeval.similarity.vendi import compute_vendi, hill_number

# ------------------------------------------------------------------------------------ 36.1 Vendi near q = 1


def _renyi_direct(p: np.ndarray, q: float) -> float:
    """exp(H_q) straight from the definition (valid away from q = 1 and for moderate q)."""
    return (np.sum(p ** q)) ** (1.0 / (1.0 - q))


@pytest.mark.parametrize("q", [np.arange(0.5, 1.6, 0.1)[5], 1 + 2 ** -52, 1 - 1e-15, 1 + 1e-15, 1 - 2 ** -53,
                               0.0, 0.5, 2.0, 500.0, 750.0, 1000.0, math.inf])
def test_vendi_five_disjoint_unigram_responses_is_five_for_every_q(q):
    out = compute_vendi([["alpha", "beta", "gamma", "delta", "omega"]], kernel="ngram", n=1, q=q)
    assert out["vendi_score"] == pytest.approx(5.0, rel=1e-12)


def test_vendi_fine_q_grid_is_monotone_and_bounded():
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.full(12, 0.4))
    near_one = [1 + k * 2.0 ** -52 for k in range(-64, 65)] + [1 + s * 10.0 ** -e for e in range(4, 17) for s in (-1, 1)]
    grid = np.unique(np.concatenate([np.linspace(0, 3, 3001), near_one, np.linspace(3, 1000, 400)]))
    values = np.array([hill_number(p, float(q)) for q in grid])
    assert np.all(values >= 1 - 1e-12) and np.all(values <= len(p) * (1 + 1e-12))
    assert np.all(np.diff(values) <= 1e-12 * values[:-1])  # VS_q never rises with q
    shannon = math.exp(-float(np.sum(p * np.log(p))))
    assert hill_number(p, 1.0) == pytest.approx(shannon, rel=1e-13)
    for q in (q for q in near_one if abs(q - 1) <= 1e-9):  # |dVS/dq| is O(VS) here, so within ~1e-9 relative
        assert hill_number(p, q) == pytest.approx(shannon, rel=1e-8)
    for q in (0.3, 0.9, 1.1, 2.0, 7.0):
        assert hill_number(p, q) == pytest.approx(_renyi_direct(p, q), rel=1e-10)
    assert hill_number(p, 1000.0) == pytest.approx(1 / p.max(), rel=1e-2)
    assert hill_number(p, math.inf) == pytest.approx(1 / p.max(), rel=1e-15)


# ------------------------------------------------------------------- 36.2 incomplete or mismatched encoder folders

@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory):
    from dialeval.testing.hub_cache import build_tiny_sentence_encoder

    return build_tiny_sentence_encoder(tmp_path_factory.mktemp("st") / "enc", dim=32)


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    from dialeval.testing.gpt2 import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


def _copy_without(src, dst, drop=()):
    import shutil

    shutil.copytree(src, dst, ignore=lambda d, names: [n for n in names if n in drop])
    return dst


def test_encoder_folder_without_tokenizer_files_is_refused(tiny_st, tmp_path, capsys):
    from dialeval.cli import main
    from dialeval.models.encoders import get_encoder
    from dialeval.models.folders import TOKENIZER_FILES
    from dialeval.models.runtime import ModelNotAvailableError

    bare = _copy_without(tiny_st, tmp_path / "bare", drop=TOKENIZER_FILES + ("merges.txt",))
    with pytest.raises(ModelNotAvailableError, match="has no tokenizer files") as info:
        get_encoder(str(bare), backend="torch")
    assert "\n" not in str(info.value) and str(bare) in str(info.value)
    texts = tmp_path / "r.jsonl"
    texts.write_text('{"predictions": ["hello there", "how are you"]}\n', encoding="utf-8")
    rc = main(["score", "--metric", "sent_bert_diversity", "--input", str(texts), "--metric-arg", f"encoder={bare}"])
    err = capsys.readouterr().err
    assert rc == 2 and [ln for ln in err.splitlines() if ln.startswith("dialeval ")][0].count("tokenizer files") == 1


def test_encoder_whose_config_does_not_match_its_weights_is_refused(tiny_gpt2, tmp_path):
    import json

    from dialeval.models.encoders import get_encoder
    from dialeval.models.runtime import ModelNotAvailableError

    bad = _copy_without(tiny_gpt2, tmp_path / "bad")
    config = json.loads((bad / "config.json").read_text(encoding="utf-8"))
    config["n_embd"] *= 2
    (bad / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ModelNotAvailableError, match="config.json does not match its weights") as info:
        get_encoder(str(bad), backend="torch")
    assert "\n" not in str(info.value)


def test_encoder_with_a_foreign_tokenizer_is_refused(tiny_gpt2, tmp_path):
    from dialeval.models.encoders import default_encoder_path, get_encoder
    from dialeval.models.runtime import ModelNotAvailableError

    mixed = _copy_without(tiny_gpt2, tmp_path / "mixed", drop=("tokenizer.json", "vocab.json", "merges.txt",
                                                                "tokenizer_config.json", "special_tokens_map.json"))
    import shutil

    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(default_encoder_path() / name, mixed / name)  # MiniLM's 30,522-token vocabulary
    with pytest.raises(ModelNotAvailableError, match="does not belong to these weights"):
        get_encoder(str(mixed), backend="torch")


# ----------------------------------------------------------------------------- 36.3 repeated CSV header columns

def test_contest_csv_with_a_repeated_header_column_is_refused(shared_data, tmp_path):
    import csv

    from dialeval.datasets import MalformedDataError
    from dialeval.datasets.contest import read_contest_csv

    src = shared_data / "diversity_eval" / "with_metrics" / "conTest" / "con_test_200_with_hds_resp_gen.csv"
    with open(src, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    flipped = tmp_path / "flipped.csv"
    col = rows[0].index("label_value")
    with open(flipped, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow([*rows[0], "label_value"])
        w.writerows([*r, str(1 - float(r[col]))] for r in rows[1:])
    with pytest.raises(MalformedDataError, match=r"repeats column\(s\) \['label_value'\]") as info:
        read_contest_csv(flipped)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_every_csv_reader_refuses_a_repeated_header(tmp_path, suffix):
    from dialeval.io.readers import MalformedDataError, read_records
    from dialeval.ui.inputs import InputError
    from dialeval.ui.uploads import read_upload

    sep = "," if suffix == ".csv" else "\t"
    path = tmp_path / f"r{suffix}"
    path.write_text(sep.join(["response", "response"]) + "\n" + sep.join(["a", "b"]) + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match="repeats column"):
        read_records(path)
    with pytest.raises(InputError, match="repeats column"):
        read_upload(path)


# --------------------------------------- 36.4 / 33.9 / 33.10: FED, DailyDialog, DailyDialog++ records the readers drop

def _one_error(capsys, rc):
    err = capsys.readouterr().err.strip()
    lines = [ln for ln in err.splitlines() if ln.startswith("dialeval ")]
    assert rc == 2 and "Traceback" not in err and len(lines) == 1, err
    return lines[0]


def _fed_folder(shared_data, tmp_path, edit):
    import json

    data = json.loads((shared_data / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    folder = tmp_path / "fed"
    folder.mkdir()
    (folder / "fed_data.json").write_text(edit(data), encoding="utf-8")
    return folder


@pytest.mark.parametrize(("name", "edit", "message"), [
    ("null entry", lambda d: __import__("json").dumps(d[:10] + [None] + d[10:]), "entry 10 (0-based): expected an object"),
    ("list entry", lambda d: __import__("json").dumps(d[:10] + [[1, 2]] + d[10:]), "entry 10 (0-based): expected an object"),
    ("turn entry without response", lambda d: __import__("json").dumps(
        [{k: v for k, v in e.items() if k != "response"} if i == 4 else e for i, e in enumerate(d)]),
     "entry 4 (0-based): has turn-level annotations but no 'response'"),
    ("5,000-digit integer", lambda d: __import__("json").dumps(d).replace('"Interesting": [', '"Interesting": [' + "7" * 5000 + ", ", 1),
     "more than 4,300 digits"),
    ("repeated key", lambda d: __import__("json").dumps(d).replace('"system": ', '"system": "Human", "system": ', 1),
     "repeats the key 'system'"),
])
@pytest.mark.parametrize("command", ["export", "meta-eval"])
def test_fed_turn_config_refuses_entries_it_used_to_drop(shared_data, tmp_path, capsys, name, edit, message, command):
    folder = _fed_folder(shared_data, tmp_path, edit)
    if command == "export":
        argv = ["datasets", "export", "fed", "--config", "turn", "--data-dir", str(folder), "--out", str(tmp_path / "o"),
                "--cache-dir", str(tmp_path / "c")]
    else:
        argv = ["meta-eval", "fed", "--config", "turn", "--metric", "column:x", "--data-dir", str(folder),
                "--cache-dir", str(tmp_path / "c")]
    from dialeval.cli import main

    line = _one_error(capsys, main(argv))
    assert message in line and "fed_data.json" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("dataset", "file", "edit", "message"), [
    ("dailydialog", "test.json", lambda t: t.replace('"topic": ', '"topic": "politics", "topic": ', 1),
     "repeats the key 'topic'"),
    ("dailydialog", "test.json", lambda t: "[null, " + t[1:], "dialogue 0 (0-based): expected an object"),
    ("dailydialog_plusplus", "dev.json", lambda t: t.replace('{"id": 0,', '{"id": ' + "1" * 5000 + ",", 1),
     "more than 4,300 digits"),
    ("dailydialog_plusplus", "dev.json", lambda t: t.replace('{"id": 0,', '{"id": 0, "id": 0,', 1),
     "repeats the key 'id'"),
])
def test_dailydialog_readers_refuse_repeated_keys_and_huge_integers(shared_data, tmp_path, capsys, dataset, file,
                                                                     edit, message):
    import shutil

    from dialeval.cli import main

    folder = tmp_path / dataset
    shutil.copytree(shared_data / dataset, folder)
    (folder / file).write_text(edit((folder / file).read_text(encoding="utf-8")), encoding="utf-8")
    line = _one_error(capsys, main(["datasets", "export", dataset, "--data-dir", str(folder), "--out",
                                    str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"), "--allow-duplicates"]))
    assert message in line and file in line


# ------------------------------------------------------ 33.11 NLI Diversity work per item is bounded by max tokens

@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory):
    from dialeval.testing.roberta import tiny_nli_model

    return str(tiny_nli_model(tmp_path_factory.mktemp("nli"), max_length=64))


def test_nli_diversity_on_a_1mb_response_is_bounded_and_unchanged(tiny_nli):
    import time

    from transformers import AutoTokenizer

    import dialeval
    from dialeval.nli.core import NLIClassifier

    words = "the tea was warm and the garden quiet ".split()
    huge = " ".join(words[i % len(words)] for i in range(220_000))  # about 1 MB
    assert len(huge) > 1_000_000
    short = ["i like green tea", "the weather is cold today"]
    clf = NLIClassifier.from_pretrained(tiny_nli, backend="torch")
    tok = AutoTokenizer.from_pretrained(tiny_nli)
    expected = tok([huge[:20_000]], [short[0]], truncation="longest_first", max_length=clf.max_length)["input_ids"][0]
    assert clf.encode([(huge, short[0])])[0]["input_ids"] == expected
    seen, real = [], clf.tokenizer.__class__.__call__

    def spy(self, text, *args, **kwargs):
        seen.extend(len(t) for t in ([text] if isinstance(text, str) else text) + list(args[:1] and (
            [args[0]] if isinstance(args[0], str) else args[0])))
        return real(self, text, *args, **kwargs)

    import unittest.mock

    with unittest.mock.patch.object(clf.tokenizer.__class__, "__call__", spy):
        clf([(huge, short[0]), (short[1], huge)])
    assert seen and max(seen) < 50_000  # never the whole megabyte
    start = time.monotonic()
    got = dialeval.load("nli_diversity").compute(predictions=[[huge, *short]], model=tiny_nli, backend="torch")
    assert time.monotonic() - start < 20
    ref = dialeval.load("nli_diversity").compute(predictions=[[huge[:20_000], *short]], model=tiny_nli, backend="torch")
    assert got["nli_diversity"] == pytest.approx(ref["nli_diversity"], abs=1e-12)


# ------------------------------------------- 33.10 train-coherence reads DailyDialog labels as the builder does

@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace('"act": "directive"', '"act": "shouting"', 1), "act 'shouting' is not one of"),
    (lambda t: t.replace('"emotion": "surprise"', '"emotion": 7', 1), "emotion 7 is not one of"),
    (lambda t: t.replace('"topic": "politics"', '"topic": "gossip"', 1), "topic 'gossip' is not one of"),
])
def test_train_coherence_refuses_labels_outside_the_class_names(shared_data, tmp_path, capsys, edit, message):
    from dialeval.cli import main

    folder = tmp_path / "dd"
    folder.mkdir()
    text = (shared_data / "dailydialog" / "test.json").read_text(encoding="utf-8")
    (folder / "test.json").write_text(edit(text), encoding="utf-8")
    line = _one_error(capsys, main(["train-coherence", "--data", str(folder), "--split", "test", "--encoder", "x",
                                    "--out", str(tmp_path / "clf")]))
    assert message in line and "dialogue 0 (0-based)" in line and not (tmp_path / "clf").exists()


def test_dress_weights_reader_refuses_repeated_keys_and_null_or_list_records(tmp_path):
    # read_texts is what dress-weights reads --train/--generated with
    from dialeval.io.readers import MalformedDataError, read_texts

    for content, message in (('{"response": "a", "response": "b"}\n', "line 1: a JSON object repeats the key 'response'"),
                             ('{"response": "a"}\nnull\n', "record 2: expected an object or a string, got NoneType"),
                             ('[{"response": "a"}, ["b"]]', "record 2: expected an object or a string, got list")):
        gen = tmp_path / ("gen.json" if content.startswith("[") else "gen.jsonl")
        gen.write_text(content, encoding="utf-8")
        with pytest.raises((MalformedDataError, ValueError), match=message.replace("(", r"\(")):
            read_texts(gen, "response")


def test_sent_bert_diversity_of_equal_responses_is_zero_not_a_rounding_negative():
    from dialeval.similarity.sent_bert import pairwise_diversity

    v = np.random.default_rng(0).standard_normal((1, 384)).astype(np.float32)
    # this vector's unit row has a float64 self-dot of 1 + 2.2e-16: the unclipped score was -2.2e-16
    assert pairwise_diversity(np.repeat(v, 2, axis=0)) == 0.0
    assert pairwise_diversity(np.concatenate([v, -v])) == 2.0  # opposite responses: cosine -1, the maximum
