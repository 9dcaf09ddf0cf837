"""Ray Data engine against a real local cluster (``ray start`` in its own processes, joined by address).

Every distributed result is compared with single-process ``dialeval.load(...).compute`` on the same real
rows: exact equality for counts, labels and corpus results; per-item model scores within 1e-6. Slices
are small so the module runs in a couple of minutes on 2 cores.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ray_helpers import LOOPBACK, cli, moto_s3, printed_json
from tolerances import TINY_LM_RTOL

os.environ.update(LOOPBACK)  # before ray is imported

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

import dialeval  # noqa: E402
from dialeval import registry  # noqa: E402
from dialeval.distributed import Settings, dress_weights, score, score_many  # noqa: E402

pytestmark = pytest.mark.slow
SPACE = Path(dialeval.__file__).parent / "resources" / "semantic_space"


def dd_responses(path: Path) -> list[str]:
    return [t["text"].strip() for d in json.loads(path.read_text()) for t in d["dialogue"][1:] if t["text"].strip()]


@pytest.fixture(scope="module")
def dailydialog(shared_data, tmp_path_factory):
    texts = dd_responses(shared_data / "dailydialog" / "test.json")
    assert len(texts) == 6740
    path = tmp_path_factory.mktemp("dd") / "responses.parquet"
    pq.write_table(pa.table({"id": list(range(len(texts))), "response": texts}), path, row_group_size=1000)
    return texts, path


def _read_output(folder: str) -> pa.Table:
    table = pq.read_table(folder)
    return table.sort_by("id")


# ----------------------------------------------------------------------------------------- lexical


def test_lexical_metrics_equal_single_process(cluster, dailydialog):
    texts, path = dailydialog
    lexical = [d.name for d in registry.by_input("responses") if not d.needs_model]
    assert sorted(lexical) == ["distinct_n", "ent_n", "low_frequency"]
    # the three in one call share one pass (one read, one tokenization), in chunks of 1000 rows
    got = score_many(str(path), {name: {} for name in lexical}, {name: {"predictions": "response"} for name in lexical},
                     settings=Settings(address=cluster, rows=1000))
    for name in lexical:
        assert got[name] == dialeval.load(name).compute(predictions=texts), name
    # an option changes the state that is merged (orders, tokenizer); a hand count on whitespace tokens
    got = score(str(path), "distinct_n", {"predictions": "response"}, address=cluster, rows_per_batch=700,
                n=[1, 2], tokenizer="whitespace")
    tokens = [t.split() for t in texts]
    unigrams = [tok for t in tokens for tok in t]
    bigrams = [tuple(t[i:i + 2]) for t in tokens for i in range(len(t) - 1)]
    assert got["distinct_1"] == len(set(unigrams)) / len(unigrams)
    assert got["distinct_2"] == len(set(bigrams)) / len(bigrams)
    assert "tok:whitespace" in got["signature"]


def test_ngram_keys_are_exact_when_tokens_hold_the_separator(cluster, tmp_path):
    """Tokens holding the key separator cannot make two n-grams one key: ("a\0\1", "b") ≠ ("a", "\0\1b")."""
    src = tmp_path / "nul.parquet"
    texts = ["a\x00\x01 b", "a \x00\x01b", "a\x00\x01 b"]
    pq.write_table(pa.table({"response": texts}), src)
    got = score(str(src), "distinct_n", {"predictions": "response"}, address=cluster, rows_per_batch=1,
                n=[2], tokenizer="whitespace")
    assert got["distinct_2"] == 2 / 3  # bigram ("a\0\1", "b") twice and ("a", "\0\1b") once


def test_runtime_env_reaches_ray_and_bad_json_is_refused(cluster, tmp_path):
    texts = ["I don't know .", "Sure , let's go .", "I don't know ."]
    src = tmp_path / "three.parquet"
    pq.write_table(pa.table({"response": texts}), src)
    env = json.dumps({"env_vars": {"DIALEVAL_RUNTIME_ENV_PROBE": "1"}})
    out = cli("score", "--engine", "ray", "--address", cluster, "--runtime-env", env, "--input", str(src),
              "--metric", "ent_n", "--field", "response", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ent_n"] == dialeval.load("ent_n").compute(predictions=texts)
    bad = cli("score", "--engine", "ray", "--address", cluster, "--runtime-env", "{not json", "--input", str(src),
              "--metric", "ent_n", "--field", "response")
    assert bad.returncode == 2 and "--runtime-env is not valid JSON" in bad.stderr


def test_bad_columns_are_one_clear_error(cluster, dailydialog, tmp_path):
    _, path = dailydialog
    with pytest.raises(ValueError, match=r"column 'text' .*not in the data.*--column predictions="):
        score(str(path), "ent_n", columns={"predictions": "text"}, address=cluster)
    with pytest.raises(ValueError, match=r"column 'id' .*holds int64.*must be a string"):
        score(str(path), "ent_n", columns={"predictions": "id"}, address=cluster)
    with pytest.raises(ValueError, match=r"no input 'responses'"):
        score(str(path), "ent_n", columns={"responses": "response"}, address=cluster)
    holey = tmp_path / "holey.parquet"
    pq.write_table(pa.table({"response": ["fine .", None, "also fine ."]}), holey)
    with pytest.raises(TypeError, match=r"response \(chunk of 3 rows\)\[1\]` is NoneType"):
        score(str(holey), "ent_n", columns={"predictions": "response"}, address=cluster)


# ----------------------------------------------------------------------------------------- Sem-Ent


def test_sem_ent_labels_and_result_equal_single_process(cluster, dailydialog, tmp_path):
    from dialeval.semantic.space import SemanticSpace

    texts, path = dailydialog
    n = 240
    ds = _ray_slice(path, n)
    out = score(ds, "sem_ent", {"predictions": "response"}, space=str(SPACE), address=cluster,
                output=tmp_path / "labels", rows_per_batch=60, concurrency=1)
    single = dialeval.load("sem_ent").compute(predictions=texts[:n], space=str(SPACE))
    assert out.pop("output") == str(tmp_path / "labels")
    assert out == single
    table = _read_output(str(tmp_path / "labels"))
    assert table.column("id").to_pylist() == list(range(n))
    assert table.column("response").to_pylist() == texts[:n]
    labels = SemanticSpace.load(SPACE).assign(texts[:n])
    assert table.column("sem_ent_cluster").to_pylist() == labels.tolist()
    assert sum(single["cluster_distribution"][j] > 0 for j in range(20)) > 10  # a real spread of clusters


def _ray_slice(path: Path, n: int):
    import ray.data

    return ray.data.read_parquet(str(path)).limit(n)


def test_dress_weights_generated(cluster, dailydialog, tmp_path):
    """The generated split on the Python API (the train split runs in the CLI test below, through this API)."""
    from dialeval.semantic.dress import dress_from_space
    from dialeval.semantic.space import SemanticSpace

    texts, path = dailydialog
    n = 200
    src = tmp_path / "gen.parquet"
    pq.write_table(pa.table({"id": list(range(n)), "text": texts[:n]}), src)
    gen = dress_weights(str(src), SPACE, split="generated", output=tmp_path / "gen", address=cluster,
                        rows_per_batch=64, concurrency=1)
    want = dress_from_space(SemanticSpace.load(SPACE), texts[:n], texts[:n])
    g = _read_output(gen["output"])
    assert g.column("cluster").to_pylist() == want["generated_labels"]
    assert g.column("weight").to_pylist() == want["generated_weights"]
    assert gen["head_clusters"] == want["head_clusters"]
    assert gen["flagged"] == sum(w < 0 for w in want["generated_weights"])


# ----------------------------------------------------------------------------------------- model metrics


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("lm") / "gpt2", arch="gpt2"))


def _fed_turns(shared_data: Path, tmp_path: Path) -> tuple[list[list[str]], list[str], Path]:
    """The first 24 FED turns: their context texts, responses, and a Parquet file of them (the context kept as
    FED's speaker-tagged turns, which the Ray engine reads as their texts)."""
    from dialeval import datasets as dds

    rows = dds.load("fed", "turn", data_dir=shared_data / "fed", cache_dir=str(tmp_path / "cache"))["test"]
    rows = rows.select(range(24)).to_list()
    contexts = [[t["text"] for t in r["context"]] for r in rows]
    responses = [r["response"] for r in rows]
    src = tmp_path / "fed.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "context": [r["context"] for r in rows],
                             "response": responses}), src)
    return contexts, responses, src


def test_full_turn_level_on_fed_equals_single_process(cluster, shared_data, tiny_lm, tmp_path):
    contexts, responses, src = _fed_turns(shared_data, tmp_path)
    with pytest.raises(ValueError, match=r"column 'response' .*contexts.*must be a list of strings"):
        score(str(src), "full_followup", {"contexts": "response", "predictions": "response"}, address=cluster,
              model=tiny_lm)
    # FED's context is a list of {speaker, text} turns: read as the turns' texts
    out = score(str(src), "full_followup", {"contexts": "context", "predictions": "response"}, address=cluster,
                model=tiny_lm, device="cpu", output=tmp_path / "full", rows_per_batch=8, concurrency=1)
    single = dialeval.load("full_followup", "turn").compute(contexts=contexts, predictions=responses,
                                                            model=tiny_lm, device="cpu")
    assert out["config"] == "turn" and out["num_items"] == 24
    assert out["signature"] == single["signature"]
    got = _read_output(out["output"]).column("full_followup").to_pylist()
    # batch shapes differ between the actors' chunks and one process, so fp32 sums of token NLLs differ in the
    # last bits: the tiny LM's tolerance, derived from its depth, widest sum and vocabulary (tests/tolerances.py)
    np.testing.assert_allclose(got, single["scores"], rtol=TINY_LM_RTOL, atol=0)
    assert out["full_followup"] == pytest.approx(math.fsum(got) / len(got), abs=1e-12)  # the mean of its rows
    assert out["full_followup"] == pytest.approx(single["full_followup"], rel=TINY_LM_RTOL, abs=0)


def test_nli_diversity_on_contest_equals_single_process(cluster, shared_data, tmp_path):
    from dialeval import datasets as dds
    from dialeval.testing.roberta import tiny_nli_model

    model = str(tiny_nli_model(tmp_path / "nli"))
    ds = dds.load("contest", "con_test_200_resp_gen", data_dir=shared_data / "diversity_eval",
                  cache_dir=str(tmp_path / "cache"))["test"]
    sets = [r["responses"] for r in ds.select(range(20))]
    src = tmp_path / "sets.parquet"
    pq.write_table(pa.table({"id": list(range(20)), "responses": sets}), src)
    out = score(str(src), "nli_diversity", {"predictions": "responses"}, address=cluster, model=model,
                device="cpu", output=tmp_path / "nli_scores", rows_per_batch=5, concurrency=1)
    single = dialeval.load("nli_diversity").compute(predictions=sets, model=model, device="cpu")
    assert out["signature"] == single["signature"] and out["num_items"] == 20
    # baseline = contradictions − entailments per set: integer counts, so exactly equal. (The confidence
    # variant sums up to 20 fp32 probabilities per set; other batch shapes move it by up to ~3e-6.)
    got = _read_output(out["output"]).column("nli_diversity").to_pylist()
    assert got == single["scores"]
    assert out["nli_diversity"] == pytest.approx(single["nli_diversity"], abs=1e-12)
    assert len(set(got)) > 1  # the tiny model does separate the sets


def test_dialspk_counts_equal_single_process(cluster, tmp_path):
    from dialeval.dialstory.dialspk import baseline_predictions
    from dialeval.resources import dataset_card_dir

    sample = dataset_card_dir("dialstory") / "sample" / "dialspk"  # package data
    stories = [json.loads(line) for line in (sample / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    preds = baseline_predictions([s["story"] for s in stories], [s["candidates"] for s in stories])
    src = tmp_path / "spk.jsonl"
    src.write_text("".join(json.dumps({"id": i, "pred": p, "gold": s["speakers"], "candidates": s["candidates"]},
                                      ensure_ascii=False) + "\n" for i, (p, s) in enumerate(zip(preds, stories))),
                   encoding="utf-8")
    cols = {"predictions": "pred", "references": "gold", "candidates": "candidates"}
    out = score(str(src), "dialspk", cols, address=cluster, output=f"file://{tmp_path}/spk", rows_per_batch=1)
    assert out["output"] == f"file://{tmp_path}/spk" and _read_output(str(tmp_path / "spk")).num_rows == len(stories)
    single = dialeval.load("dialspk").compute(predictions=preds, references=[s["speakers"] for s in stories],
                                              candidates=[s["candidates"] for s in stories])
    hits = sum(p == g for pr, s in zip(preds, stories) for p, g in zip(pr, s["speakers"]))
    assert out["dac"] == hits / sum(len(s["speakers"]) for s in stories)
    assert {k: out[k] for k in ("dac", "sac", "num_turns", "num_stories", "signature")} == \
        {k: single[k] for k in ("dac", "sac", "num_turns", "num_stories", "signature")}
    assert _read_output(str(tmp_path / "spk")).column("dialspk").to_pylist() == single["story_scores"]
    # a rerun into the same folder is refused; with overwrite it replaces it (hive partitions by id here)
    with pytest.raises(FileExistsError, match=r"spk' is not empty; .*--overwrite"):
        score(str(src), "dialspk", cols, address=cluster, output=tmp_path / "spk")
    score(str(src), "dialspk", cols, address=cluster, output=tmp_path / "spk", overwrite=True, partition_by=["id"])
    parts = sorted(p.name for p in (tmp_path / "spk").iterdir())
    assert parts == sorted(f"id={i}" for i in range(len(stories)))
    assert pq.read_table(tmp_path / "spk" / "id=0").column("dialspk").to_pylist() == single["story_scores"][:1]


def test_dialgen_bleu_and_dist_equal_single_process(cluster, shared_data, tmp_path, capsys):
    """DialGen on Ray: per-turn BLEU rows kept in input order across chunks, Dist-2/3/4 from merged counts."""
    from dialeval.cli import main

    dialogues = json.loads((shared_data / "dailydialog" / "test.json").read_text(encoding="utf-8"))[:41]
    turns = [[t["text"] for t in d["dialogue"][1:4]] for d in dialogues]
    preds = turns[:40]
    refs = [(nxt + ["."] * len(p))[:len(p)] for p, nxt in zip(preds, turns[1:])]  # another dialogue's turns
    src = tmp_path / "gen.jsonl"
    src.write_text("".join(json.dumps({"gen": p, "gold": r}) + "\n" for p, r in zip(preds, refs)), encoding="utf-8")
    single = dialeval.load("dialgen").compute(predictions=preds, references=refs)
    got = score(str(src), "dialgen", {"predictions": "gen", "references": "gold"}, address=cluster, rows_per_batch=7)
    assert got == single
    assert len(got["turn_bleu"]["bleu_1"]) == sum(len(p) for p in preds) and 0 < got["bleu_1"] < 1
    assert main(["score", "--engine", "ray", "--address", cluster, "--input", str(src), "--metric", "dialgen",
                 "--column", "predictions=gen", "--column", "references=gold", "--json"]) == 0
    assert printed_json(capsys.readouterr().out)["dialgen"] == single


def test_local_score_loads_no_engine(tmp_path):
    """`dialeval score` without --engine imports neither Ray nor the engine (column roles only)."""
    src = tmp_path / "two.jsonl"
    src.write_text('{"response": "hello there ."}\n{"response": "hi ."}\n', encoding="utf-8")
    code = ("import sys; from dialeval.cli import main; "
            f"rc = main(['score', '--input', {str(src)!r}, '--metric', 'distinct_n', '--field', 'response', '--json']);"
            "bad = sorted(m for m in sys.modules if m == 'ray' or m.startswith(('ray.', 'dialeval.distributed.api', "
            "'dialeval.distributed.engine'))); print(rc, bad, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stderr.strip().splitlines()[-1] == "0 []", out.stderr
    assert json.loads(out.stdout)["distinct_n"]["distinct_1"] == 4 / 5  # hello, there, ., hi, . → 4 distinct of 5


# ----------------------------------------------------------------------------------------- object storage


@pytest.fixture()
def s3(monkeypatch):
    yield from moto_s3(monkeypatch)


def test_s3_input_and_output_equal_local_files(cluster, dailydialog, s3, tmp_path):
    import pyarrow.fs as pafs

    fs, env = s3
    texts, path = dailydialog
    pafs.copy_files(str(path), "bench/in/responses.parquet", source_filesystem=pafs.LocalFileSystem(),
                    destination_filesystem=fs)
    args = ["score", "--engine", "ray", "--address", cluster, "--input", "s3://bench/in/", "--metric", "distinct_n",
            "--metric", "low_frequency", "--field", "response", "--output", "s3://bench/out", "--json"]
    first = cli(*args, env=env)
    assert first.returncode == 0, first.stderr
    want = {name: dialeval.load(name).compute(predictions=texts) for name in ("distinct_n", "low_frequency")}
    assert json.loads(first.stdout) == want
    with fs.open_input_stream("bench/out/results.json") as f:
        assert json.loads(f.read()) == want
    again = cli(*args, env=env)  # the same prefix again: refused, nothing written
    assert again.returncode == 2 and again.stdout == ""
    assert "'s3://bench/out' is not empty" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    assert cli(*args, "--overwrite", env=env).returncode == 0
    # per-item output through a filesystem object (the Python API): the same rows as a local run
    out = score("bench/in/responses.parquet", "ent_n", {"predictions": "response"}, address=cluster, filesystem=fs)
    assert out == dialeval.load("ent_n").compute(predictions=texts)
    spk = tmp_path / "spk.jsonl"
    spk.write_text("".join(json.dumps({"id": i, "pred": ["A", "B"], "gold": ["A", "A" if i % 2 else "B"]}) + "\n"
                           for i in range(6)), encoding="utf-8")
    pafs.copy_files(str(spk), "bench/spk/in.jsonl", source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
    cols = {"predictions": "pred", "references": "gold"}
    remote = score("bench/spk/in.jsonl", "dialspk", cols, address=cluster, filesystem=fs, output="bench/spk/out")
    local = score(str(spk), "dialspk", cols, address=cluster, output=tmp_path / "spk_out")
    assert {k: v for k, v in remote.items() if k != "output"} == {k: v for k, v in local.items() if k != "output"}
    scores = pq.read_table("bench/spk/out", filesystem=fs).sort_by("id").column("dialspk").to_pylist()
    assert scores == [1.0, 0.5] * 3 == _read_output(str(tmp_path / "spk_out")).column("dialspk").to_pylist()


# ----------------------------------------------------------------------------------------- fault tolerance


def test_killed_actor_is_restarted_and_json_output_stays_valid(cluster, dailydialog, tmp_path):
    """`dialeval score --engine ray --json` while an actor is SIGKILLed: the actor is replaced, every row is
    written once and in order, and stdout is exactly the JSON result (Ray's lines never reach it)."""
    from dialeval.semantic.space import SemanticSpace

    texts, _ = dailydialog
    n = 480
    src = tmp_path / "slice.parquet"
    pq.write_table(pa.table({"id": list(range(n)), "response": texts[:n]}), src)
    info, out = tmp_path / "actors", tmp_path / "scored"
    proc = subprocess.Popen([sys.executable, "-m", "dialeval", "score", "--engine", "ray", "--address", cluster,
                             "--input", str(src), "--metric", "sem_ent", "--field", "response", "--metric-arg",
                             f"space={SPACE}", "--rows-per-batch", "24", "--concurrency", "1", "--actor-info-dir",
                             str(info), "--output", str(out), "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **LOOPBACK})
    victim = None
    deadline = time.time() + 240
    while victim is None and time.time() < deadline and proc.poll() is None:
        for f in info.glob("*.json") if info.is_dir() else []:
            if json.loads(f.read_text())["batches"] >= 1:
                victim = int(f.stem)
        time.sleep(0.05)
    assert victim is not None, "no actor finished a batch"
    os.kill(victim, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=400)
    assert proc.returncode == 0, stderr
    printed = json.loads(stdout)  # nothing but the JSON result
    assert printed["sem_ent"]["num_predictions"] == n
    pids = {int(f.stem) for f in info.glob("*.json")}
    assert victim in pids and len(pids) >= 2  # the killed actor was replaced by a new process
    table = _read_output(str(out / "sem_ent"))
    assert table.column("id").to_pylist() == list(range(n))  # complete, no duplicates
    labels = SemanticSpace.load(SPACE).assign(texts[:n])
    assert table.column("sem_ent_cluster").to_pylist() == labels.tolist()
    assert json.loads((out / "results.json").read_text()) == printed


# ----------------------------------------------------------------------------------------- CLI


def test_cli_engine_ray_score_and_dress_weights(cluster, dailydialog, tmp_path, capsys):
    from dialeval.cli import main
    from dialeval.semantic.dress import dress_from_space
    from dialeval.semantic.space import SemanticSpace

    texts, _ = dailydialog
    n = 120
    src = tmp_path / "small.parquet"
    pq.write_table(pa.table({"id": list(range(n)), "response": texts[:n]}), src)
    out = tmp_path / "scored"
    assert main(["score", "--engine", "ray", "--address", cluster, "--input", str(src), "--metric", "ent_n",
                 "--metric", "sem_ent", "--column", "predictions=response", "--metric-arg", f"space={SPACE}",
                 "--concurrency", "1", "--output", str(out), "--json"]) == 0
    printed = printed_json(capsys.readouterr().out)
    assert printed["ent_n"] == dialeval.load("ent_n").compute(predictions=texts[:n])
    want = dialeval.load("sem_ent").compute(predictions=texts[:n], space=str(SPACE))
    assert printed["sem_ent"]["sem_ent"] == want["sem_ent"] and printed["sem_ent"]["signature"] == want["signature"]
    assert json.loads((out / "results.json").read_text()) == printed
    assert _read_output(str(out / "sem_ent")).num_rows == n
    assert main(["score", "--engine", "ray", "--address", cluster, "--input", str(src), "--metric", "ent_n",
                 "--column", "predictions=nope"]) == 2
    assert "column 'nope'" in capsys.readouterr().err
    weights = tmp_path / "weights"
    assert main(["dress-weights", "--engine", "ray", "--address", cluster, "--space", str(SPACE), "--train",
                 str(src), "--field", "response", "--concurrency", "1", "--out", str(weights)]) == 0
    got = _read_output(str(weights / "train"))
    want = dress_from_space(SemanticSpace.load(SPACE), texts[:n])
    assert got.column("cluster").to_pylist() == want["training_labels"]
    assert got.column("weight").to_pylist() == want["training_weights"]


@pytest.mark.parametrize("metric, tol", [("context_relevance", 1e-5), ("learned_quality", 2e-4)])
def test_reference_free_quality_on_ray_equals_single_process(metric, tol, cluster, shared_data, tmp_path):
    """The encoder runs in other batch shapes on the actors: fp32 embeddings agree to ~1e-6, a cosine to 1e-5 and
    the learned evaluator's probabilities (a sigmoid of slope up to ~30 over it) to 2e-4."""
    contexts, responses, src = _fed_turns(shared_data, tmp_path)
    out = score(str(src), metric, {"contexts": "context", "predictions": "response"}, address=cluster,
                config="turn", device="cpu", output=tmp_path / metric, rows_per_batch=8, concurrency=1)
    single = dialeval.load(metric, "turn").compute(contexts=contexts, predictions=responses, device="cpu")
    assert out["config"] == "turn" and out["num_items"] == 24 and out["signature"] == single["signature"]
    got = _read_output(out["output"]).column(metric).to_pylist()
    np.testing.assert_allclose(got, single["scores"], rtol=0, atol=tol)
