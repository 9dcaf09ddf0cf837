"""SemanticSpace with a real (tiny, offline) encoder: determinism, save/load, encoder checks, the
evaluate module and the CLI commands."""

import json
import math

import numpy as np
import pytest

import dialeval
from dialeval.cli import main
from dialeval.semantic.dress import dress_from_space
from dialeval.semantic.space import SemanticSpace, cluster_distribution, entropy_nats
from dialeval.testing import TRAINING_TEXTS
from dialeval.testing.gpt2 import build_tiny_gpt2

REFS = TRAINING_TEXTS  # 22 distinct responses
PREDS = ["Yes .", "Yes .", "Thank you very much .", "I don't know .", "Let's go to the movies !", "Okay ."]


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return build_tiny_gpt2(tmp_path_factory.mktemp("gpt2a"), seed=0)


@pytest.fixture(scope="module")
def space(gpt2_dir):
    return SemanticSpace.fit(REFS, encoder=str(gpt2_dir), k=4)


def test_fit_is_deterministic_and_assign_consistent(space, gpt2_dir):
    again = SemanticSpace.fit(REFS, encoder=f"hf-last-token:{gpt2_dir}", k=4)
    assert again.fingerprint == space.fingerprint
    np.testing.assert_array_equal(again.reference_labels, space.reference_labels)
    # assigning the references again gives the labels k-means was fitted with
    np.testing.assert_array_equal(space.assign(REFS), space.reference_labels)
    labels = space.assign(PREDS)
    assert labels[0] == labels[1]  # identical responses, identical clusters
    assert space.sem_ent(PREDS) == entropy_nats(cluster_distribution(labels, 4))
    assert space.config["kept_components"] < space.config["dim"]
    assert space.encoder_name == f"hf-last-token:{gpt2_dir}"


def test_save_load_round_trip_gives_identical_assignments(space, tmp_path):
    space.save(tmp_path / "sp")
    meta = json.loads((tmp_path / "sp" / "space.json").read_text())
    assert meta["encoder"] == space.encoder_name and meta["config"]["k"] == 4
    assert meta["config"]["pca_seed"] == 26 and meta["config"]["kmeans_seed"] == 27
    assert {"numpy", "scikit-learn", "faiss-cpu", "torch", "transformers"} <= set(meta["versions"])
    assert meta["reference_distribution"] == pytest.approx(space.reference_distribution.tolist())
    loaded = SemanticSpace.load(tmp_path / "sp")  # loads its encoder by name on first use
    np.testing.assert_array_equal(loaded.assign(PREDS + REFS), space.assign(PREDS + REFS))


def test_space_saved_with_another_encoder_is_an_error(space, tmp_path, tmp_path_factory):
    other = build_tiny_gpt2(tmp_path_factory.mktemp("gpt2b"), seed=1)
    space.save(tmp_path / "sp")
    with pytest.raises(ValueError, match="fitted with encoder"):
        SemanticSpace.load(tmp_path / "sp", encoder=str(other))
    with pytest.raises(ValueError, match="fitted with encoder"):
        dialeval.load("sem_ent").compute(predictions=PREDS, space=str(tmp_path / "sp"), encoder=str(other))


def test_bad_inputs_are_clear_errors(space, gpt2_dir):
    with pytest.raises(ValueError, match="at least 30 distinct reference responses"):
        SemanticSpace.fit(REFS + REFS, encoder=str(gpt2_dir), k=30)
    with pytest.raises(ValueError, match="`predictions` is empty"):
        space.assign([])
    with pytest.raises(ValueError, match=r"`predictions\[2\]` is an empty string"):
        space.assign(["a", "b", ""])
    m = dialeval.load("sem_ent")
    with pytest.raises(ValueError, match="`predictions` is empty"):
        m.compute(predictions=[], space=space)
    # no space and no references: the bundled space (tests/test_defaults.py)
    with pytest.raises(ValueError, match="not both"):
        m.compute(predictions=PREDS, space=space, reference_responses=REFS)
    with pytest.raises(ValueError, match=r"`reference_responses\[1\]` is an empty string"):
        m.compute(predictions=PREDS, reference_responses=["a", ""], encoder=str(gpt2_dir), k=2)


def test_evaluate_module_output(space, gpt2_dir, tmp_path):
    space.save(tmp_path / "sp")
    m = dialeval.load("sem_ent", examples_per_cluster=2)
    out = m.compute(predictions=PREDS, space=str(tmp_path / "sp"), references=REFS[:5])
    labels = space.assign(PREDS)
    dist = cluster_distribution(labels, 4)
    assert out["sem_ent"] == pytest.approx(entropy_nats(dist), abs=1e-15)
    assert out["max_sem_ent"] == pytest.approx(math.log(4))
    assert out["cluster_distribution"] == dist.tolist()
    assert out["reference_distribution"] == space.reference_distribution.tolist()
    assert out["human_sem_ent"] == pytest.approx(space.sem_ent(REFS[:5]))
    assert out["k"] == 4 and out["num_predictions"] == len(PREDS)
    assert len(out["cluster_examples"]) == 4
    assert out["cluster_examples"][labels[0]][0] == "Yes ."
    assert all(len(ex) <= 2 for ex in out["cluster_examples"])
    sig = out["signature"]
    assert sig.startswith("sem_ent|encoder:") and f"space:{space.fingerprint}" in sig and "dtype:fp32" in sig
    # fitting from reference_responses inside compute gives the same space and score
    fitted = m.compute(predictions=PREDS, reference_responses=REFS, encoder=str(gpt2_dir), k=4)
    assert fitted["sem_ent"] == out["sem_ent"] and fitted["signature"] == sig


def test_dress_from_space(space):
    res = dress_from_space(space, generated_responses=PREDS, gamma=30, head="share>0.1")
    p = space.reference_distribution
    assert res["training_weights"] == pytest.approx([(1 - p[c]) ** 30 for c in space.reference_labels])
    gen = space.assign(PREDS)
    share = cluster_distribution(gen, 4)
    assert res["head"] == "share>0.1"
    assert res["head_clusters"] == [j for j in range(4) if share[j] > 0.1]
    assert res["generated_weights"] == [-1.0 if share[c] > 0.1 else 0.0 for c in gen]
    top2 = dress_from_space(space, generated_responses=PREDS, head="top2")
    order = sorted((j for j in range(4) if share[j] > 0), key=lambda j: (-share[j], j))[:2]
    assert top2["head_clusters"] == sorted(order)
    assert top2["generated_weights"] == [-1.0 if c in order else 0.0 for c in gen]


def test_cli_fit_space_and_dress_weights(gpt2_dir, tmp_path, capsys):
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(REFS), encoding="utf-8")
    gen = tmp_path / "gen.jsonl"
    gen.write_text("".join(json.dumps({"response": t}) + "\n" for t in PREDS), encoding="utf-8")
    assert main(["fit-space", "--reference", str(ref), "--encoder", str(gpt2_dir), "--k", "4",
                 "--out", str(tmp_path / "sp"), "--plot"]) == 0
    assert "fitted 4 clusters on 22 reference responses" in capsys.readouterr().out
    assert (tmp_path / "sp" / "reference_distribution.png").stat().st_size > 1000
    space = SemanticSpace.load(tmp_path / "sp")
    assert main(["dress-weights", "--space", str(tmp_path / "sp"), "--generated", str(gen),
                 "--field", "response", "--out", str(tmp_path / "w.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["split"] == "train"]
    generated = [r for r in rows if r["split"] == "generated"]
    assert len(train) == 22 and len(generated) == len(PREDS)
    p = space.reference_distribution
    assert [r["weight"] for r in train] == pytest.approx([(1 - p[c]) ** 30 for c in space.reference_labels])
    assert {r["weight"] for r in generated} <= {0.0, -1.0}
    capsys.readouterr()
    # the reference code's rule, spelled both ways, flags the same rows; a bad rule is one line, exit 2
    for i, flag in enumerate((["--head", "share>0.1"], ["--threshold", "0.1"])):
        assert main(["dress-weights", "--space", str(tmp_path / "sp"), "--generated", str(gen), "--field", "response",
                     *flag, "--out", str(tmp_path / f"s{i}.jsonl")]) == 0
        assert "head clusters (share>0.1)" in capsys.readouterr().out
    assert (tmp_path / "s0.jsonl").read_bytes() == (tmp_path / "s1.jsonl").read_bytes()
    assert main(["dress-weights", "--space", str(tmp_path / "sp"), "--generated", str(gen), "--field", "response",
                 "--head", "top0", "--out", str(tmp_path / "bad.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "head='top0'" in err and not (tmp_path / "bad.jsonl").exists()
    # k too large: a clear error on stderr, exit status 2
    assert main(["fit-space", "--reference", str(ref), "--encoder", str(gpt2_dir), "--k", "50",
                 "--out", str(tmp_path / "x")]) == 2
    assert "distinct reference responses" in capsys.readouterr().err
