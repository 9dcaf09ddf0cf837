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
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# Ray resolves 127.0.0.1 to the routable address unless this is off (read when ray is imported, so set
# first); off, the cluster and this driver use loopback only.
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_AUTH_MODE": "disabled"}  # a ~/.ray/auth_token left by anyone would switch token auth on
os.environ.update(LOOPBACK)

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

import dialeval  # noqa: E402
from dialeval import registry  # noqa: E402
from dialeval.distributed import dress_weights, score  # noqa: E402

pytestmark = pytest.mark.slow
SPACE = Path(dialeval.__file__).parent / "resources" / "semantic_space"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster_pids(temp_dir: str) -> set[int]:
    """Processes of the cluster rooted in ``temp_dir`` (their command line names it) and their children."""
    parents: dict[int, int] = {}
    mine: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if temp_dir.encode() in cmd:
            mine.add(int(entry.name))
    grown = True
    while grown:
        kids = {pid for pid, ppid in parents.items() if ppid in mine} - mine
        grown = bool(kids)
        mine |= kids
    return mine


def _stop_cluster(temp_dir: str) -> None:
    """What ``ray stop`` does, limited to this cluster's processes (``ray stop`` would also stop any other
    Ray cluster on the machine): SIGTERM, then SIGKILL after a grace period."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        pids = _cluster_pids(temp_dir)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + wait
        while time.time() < deadline and any(Path(f"/proc/{p}/cmdline").exists() and
                                             Path(f"/proc/{p}/cmdline").read_bytes() for p in pids):
            time.sleep(0.2)


@pytest.fixture(scope="session")
def cluster():
    """A 2-CPU Ray cluster on loopback, started as separate processes; stopped after the session."""
    import ray

    temp_dir = tempfile.mkdtemp(prefix="dlr", dir="/tmp")  # Ray's socket paths must stay short
    port = _free_port()
    cmd = ["ray", "start", "--head", "--num-cpus", "2", "--include-dashboard", "false", "--temp-dir", temp_dir,
           "--port", str(port), "--node-ip-address", "127.0.0.1", "--object-store-memory", str(400 * 2**20),
           "--disable-usage-stats"]
    subprocess.run([Path(sys.executable).parent / cmd[0], *cmd[1:]], check=True, capture_output=True,
                   env={**os.environ, **LOOPBACK}, timeout=180)
    address = f"127.0.0.1:{port}"
    try:
        yield address
    finally:
        ray.shutdown()
        _stop_cluster(temp_dir)


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
    for name in lexical:
        got = score(str(path), name, columns={"predictions": "response"}, address=cluster, rows_per_batch=1000)
        assert got == dialeval.load(name).compute(predictions=texts), name
    # an option changes the state that is merged (orders, tokenizer); a hand count on whitespace tokens
    got = score(str(path), "distinct_n", {"predictions": "response"}, address=cluster, rows_per_batch=700,
                n=[1], tokenizer="whitespace")
    tokens = [tok for t in texts for tok in t.split()]
    assert got["distinct_1"] == len(set(tokens)) / len(tokens)
    assert "tok:whitespace" in got["signature"]


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


def test_dress_weights_train_and_generated(cluster, dailydialog, tmp_path):
    from dialeval.semantic.dress import dress_from_space
    from dialeval.semantic.space import SemanticSpace

    texts, path = dailydialog
    n = 200
    src = tmp_path / "gen.parquet"
    pq.write_table(pa.table({"id": list(range(n)), "text": texts[:n]}), src)
    train = dress_weights(str(src), SPACE, split="train", output=tmp_path / "train", address=cluster,
                          rows_per_batch=64, concurrency=1)
    gen = dress_weights(str(src), SPACE, split="generated", output=tmp_path / "gen", address=cluster,
                        rows_per_batch=64, concurrency=1)
    want = dress_from_space(SemanticSpace.load(SPACE), texts[:n], texts[:n])
    t, g = _read_output(train["output"]), _read_output(gen["output"])
    assert t.column("cluster").to_pylist() == want["training_labels"]
    assert t.column("weight").to_pylist() == want["training_weights"]
    assert g.column("weight").to_pylist() == want["generated_weights"]
    assert gen["head_clusters"] == want["head_clusters"]
    assert gen["flagged"] == sum(w < 0 for w in want["generated_weights"])


# ----------------------------------------------------------------------------------------- model metrics


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("lm") / "gpt2", arch="gpt2"))


def test_full_turn_level_on_fed_equals_single_process(cluster, shared_data, tiny_lm, tmp_path):
    from dialeval import datasets as dds

    rows = dds.load("fed", "turn", data_dir=shared_data / "fed", cache_dir=str(tmp_path / "cache"))["test"]
    rows = rows.select(range(24)).to_list()
    contexts = [[t["text"] for t in r["context"]] for r in rows]
    responses = [r["response"] for r in rows]
    src = tmp_path / "fed.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "context": [r["context"] for r in rows],
                             "response": responses}), src)
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
    # last bits: compare relatively (1e-6 ≈ 8 fp32 ulps; observed 1.8e-8 on values near 58.8)
    np.testing.assert_allclose(got, single["scores"], rtol=1e-6, atol=0)
    assert out["full_followup"] == pytest.approx(math.fsum(got) / len(got), abs=1e-12)  # the mean of its rows
    assert out["full_followup"] == pytest.approx(single["full_followup"], rel=1e-6, abs=0)


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
    out = score(str(src), "dialspk", {"predictions": "pred", "references": "gold", "candidates": "candidates"},
                address=cluster, output=tmp_path / "spk", rows_per_batch=1)
    single = dialeval.load("dialspk").compute(predictions=preds, references=[s["speakers"] for s in stories],
                                              candidates=[s["candidates"] for s in stories])
    hits = sum(p == g for pr, s in zip(preds, stories) for p, g in zip(pr, s["speakers"]))
    assert out["dac"] == hits / sum(len(s["speakers"]) for s in stories)
    assert {k: out[k] for k in ("dac", "sac", "num_turns", "num_stories", "signature")} == \
        {k: single[k] for k in ("dac", "sac", "num_turns", "num_stories", "signature")}
    assert _read_output(out["output"]).column("dialspk").to_pylist() == single["story_scores"]


# ----------------------------------------------------------------------------------------- fault tolerance


def test_killed_actor_is_restarted_and_no_row_is_lost_or_duplicated(cluster, dailydialog, tmp_path):
    from dialeval.semantic.space import SemanticSpace

    texts, path = dailydialog
    n = 480
    info = tmp_path / "actors"
    result: dict = {}

    def run() -> None:
        try:
            result["out"] = score(_ray_slice(path, n), "sem_ent", {"predictions": "response"}, space=str(SPACE),
                                  address=cluster, output=tmp_path / "labels", rows_per_batch=24, concurrency=1,
                                  actor_info_dir=str(info))
        except BaseException as exc:  # surfaced below
            result["error"] = exc

    job = threading.Thread(target=run)
    job.start()
    victim = None
    deadline = time.time() + 240
    while victim is None and time.time() < deadline and job.is_alive():
        for f in info.glob("*.json") if info.is_dir() else []:
            if json.loads(f.read_text())["batches"] >= 1:
                victim = int(f.stem)
        time.sleep(0.05)
    assert victim is not None, "no actor finished a batch"
    os.kill(victim, signal.SIGKILL)
    job.join(timeout=400)
    assert "error" not in result, result.get("error")
    pids = {int(f.stem) for f in info.glob("*.json")}
    assert victim in pids and len(pids) >= 2  # the killed actor was replaced by a new process
    table = _read_output(result["out"]["output"])
    assert table.column("id").to_pylist() == list(range(n))  # complete, no duplicates
    labels = SemanticSpace.load(SPACE).assign(texts[:n])
    assert table.column("sem_ent_cluster").to_pylist() == labels.tolist()
    assert result["out"]["num_predictions"] == n


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
    printed = json.loads(capsys.readouterr().out)
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
    assert got.column("weight").to_pylist() == dress_from_space(SemanticSpace.load(SPACE), texts[:n])["training_weights"]
