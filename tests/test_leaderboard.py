"""The leaderboard: paired tests against independent computations, its conTest ρ against meta-eval's, the
DailyDialog++ AUC protocol against scikit-learn, and the command's outputs, resume and refusals."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import roc_auc_score

from dialeval.meta import leaderboard
from dialeval.meta.evaluation import STATISTICS, meta_evaluate, protocol_rows, targets_for
from dialeval.meta.stats import paired_bootstrap, williams_test


def _williams_by_hand(r12: float, r13: float, r23: float, n: int) -> float:
    """Steiger (1980) eq. 7 with |R| as the determinant of the 3×3 correlation matrix; two-sided p."""
    big_r = np.linalg.det(np.array([[1, r12, r13], [r12, 1, r23], [r13, r23, 1]]))
    t = (r12 - r13) * math.sqrt(((n - 1) * (1 + r23)) / (2 * (n - 1) / (n - 3) * big_r + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3))
    return 2 * (1 - sps.t.cdf(abs(t), df=n - 3))


def test_williams_equals_hand_formula_on_synthetic_data():
    rng = np.random.default_rng(3)
    for n in (20, 120, 500):
        human = rng.normal(size=n)
        a = human + rng.normal(scale=1.0, size=n)
        b = 0.5 * a + human * 0.2 + rng.normal(scale=1.5, size=n)
        r12, r13, r23 = (sps.spearmanr(x, y).statistic for x, y in ((human, a), (human, b), (a, b)))
        got = williams_test(r12, r13, r23, n)
        assert got["p_value"] == pytest.approx(_williams_by_hand(r12, r13, r23, n), rel=1e-9, abs=1e-15)
        assert math.copysign(1, got["t"]) == math.copysign(1, r12 - r13)
    assert williams_test(0.5, 0.5, 1.0, 50)["p_value"] == 1.0  # the same metric twice
    with pytest.raises(ValueError, match="more than 3 rows"):
        williams_test(0.1, 0.2, 0.3, 3)


def test_paired_bootstrap_equals_independent_loop():
    """Same resampled rows (seeded draw), statistic from scipy instead of dialeval's own Spearman."""
    rng = np.random.default_rng(5)
    n, b_count = 60, 300
    human = rng.normal(size=n)
    a, b = human + rng.normal(size=n), human + rng.normal(scale=2.0, size=n)
    got = paired_bootstrap(STATISTICS["spearman"], a, b, human, n_resamples=b_count, seed=11)
    observed = sps.spearmanr(a, human).statistic - sps.spearmanr(b, human).statistic
    idx = np.random.default_rng(11).integers(0, n, size=(b_count, n))
    diffs = np.array([sps.spearmanr(a[i], human[i]).statistic - sps.spearmanr(b[i], human[i]).statistic for i in idx])
    p = (1 + np.sum(np.abs(diffs - observed) >= abs(observed))) / (1 + b_count)
    assert got["difference"] == pytest.approx(observed, abs=1e-12)
    assert got["p_value"] == pytest.approx(p, abs=1e-12)
    assert got["ci_low"] == pytest.approx(np.quantile(diffs, 0.025), abs=1e-12)
    same = paired_bootstrap(STATISTICS["spearman"], a, a, human, n_resamples=50, seed=0)
    assert same["difference"] == 0 and same["p_value"] == 1.0


def test_dailydialog_plusplus_protocol_auc_equals_sklearn():
    rows = [{"id": i, "context": ["hi", "hello"], "positive_responses": [f"p{i}{k}" for k in range(5)],
             "random_negative_responses": [f"r{i}{k}" for k in range(5)],
             "adversarial_negative_responses": [f"a{i}{k}" for k in range(5)]} for i in range(4)]
    flat = protocol_rows("dailydialog_plusplus", rows)
    assert len(flat) == 60 and flat[0] == {"id": 0, "context": ["hi", "hello"], "response": "p00", "label": 1.0}
    scores = np.random.default_rng(0).normal(size=60) + np.array([r["label"] for r in flat])
    labels = np.array([r["label"] for r in flat])
    random_t, adversarial_t = targets_for("dailydialog_plusplus", "default", flat)
    keep = labels >= 0
    assert STATISTICS["auc"](scores, np.asarray(random_t.values)) == pytest.approx(
        roc_auc_score(labels[keep] == 1, scores[keep]), abs=1e-12)
    keep = labels != 0
    assert STATISTICS["auc"](scores, np.asarray(adversarial_t.values)) == pytest.approx(
        roc_auc_score(labels[keep] == 1, scores[keep]), abs=1e-12)


def test_contest_rho_equals_meta_eval(shared_data, tmp_path):
    report = leaderboard.build(shared_data, tmp_path / "lb", datasets=["contest"], metrics=["distinct_n"],
                               n_resamples=100, log=lambda _: None)
    ref = meta_evaluate("contest", "distinct_n", config=["con_test_200_resp_gen", "dec_test_200_resp_gen"],
                        data_dir=shared_data / "diversity_eval", n_resamples=100)
    expected = [(cfg, r) for cfg, res in ref["configs"].items() for r in res["results"]]
    assert len(report["rows"]) == len(expected) == 5
    for row, (cfg, r) in zip(report["rows"], expected):
        assert (row["config"], row["target"], row["statistic"]) == (cfg, r["target"], r["statistic"])
        assert (row["value"], row["ci_low"], row["ci_high"], row["n"]) == (r["value"], r["ci_low"], r["ci_high"], r["n"])
        assert row["signature"] == ref["configs"][cfg]["metric_signature"]
    assert report["pairs"] == []  # one metric: nothing to pair
    # published numbers only for the units this run scored: conTest's, not FED's or DailyDialog++'s
    assert report["published"] and {p["dataset"] for p in report["published"]} == {"contest"}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dialeval", "leaderboard", *args], capture_output=True, text=True,
                          timeout=600)


def _args(shared_data, out) -> list[str]:
    return ["--data-dir", str(shared_data), "--dataset", "contest", "--metric", "distinct_n", "--metric", "ent_n",
            "--resamples", "100", "--out", str(out)]


@pytest.fixture(scope="module")
def board_dir(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("leaderboard") / "board"
    first = _run(*_args(shared_data, out))
    assert first.returncode == 0, first.stderr
    return out


def test_command_writes_resumes_and_refuses(shared_data, board_dir, tmp_path):
    out, args = board_dir, _args(shared_data, board_dir)
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert {r["metric"] for r in board["rows"]} == {"distinct_n", "ent_n"} and len(board["rows"]) == 10
    for row in board["rows"]:
        assert row["ci_low"] <= row["value"] <= row["ci_high"] and row["signature"] and row["n"] in (220, 203)
    assert len(board["pairs"]) == 5  # one pair × (3 conTest + 2 decTest targets)
    for pair in board["pairs"]:
        assert 0 < pair["p_bootstrap"] <= 1
        assert (pair["p_williams"] is None) == (pair["statistic"] != "spearman")
    md = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert md.startswith("| contest | con_test_200_resp_gen label_value spearman |") and "\n| metric | dataset |" in md
    row = board["rows"][3]  # ent_n, conTest, label_value, Spearman: the first column of its line
    assert (row["metric"], row["config"], row["target"], row["statistic"]) == (
        "ent_n", "con_test_200_resp_gen", "label_value", "spearman")
    assert f"| ent_n | {row['value']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] |" in md
    assert (out / "leaderboard.png").read_bytes()[:4] == b"\x89PNG"
    again = _run(*args)
    assert again.returncode == 0 and again.stderr.count(": cached") == 4
    assert json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))["rows"] == board["rows"]

    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me", encoding="utf-8")
    digest = hashlib.sha256((foreign / "notes.txt").read_bytes()).hexdigest()
    refused = _run(*args[:-1], str(foreign))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "did not create" in refused.stderr
    assert hashlib.sha256((foreign / "notes.txt").read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    inside = _run(*args[:-1], str(shared_data / "lb"))
    assert inside.returncode == 2 and "inside the" in inside.stderr and not (shared_data / "lb").exists()
    bad = _run("--data-dir", str(shared_data), "--metric", "dialspk", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "--metric 'dialspk' has no human-judged dataset" in bad.stderr
    assert not (tmp_path / "x").exists()  # refused before anything is written
    rows = _run("--data-dir", str(shared_data), "--max-rows", "fed=3", "--out", str(tmp_path / "y"))
    assert rows.returncode == 2 and "at least 10 rows" in rows.stderr and not (tmp_path / "y").exists()
    frac = _run("--data-dir", str(shared_data), "--fraction", "2", "--out", str(tmp_path / "z"))
    assert frac.returncode == 2 and "--fraction must be a number above 0 and below 1" in frac.stderr and not (tmp_path / "z").exists()


@pytest.mark.slow
def test_done_when_command_contest(shared_data, tmp_path):
    """The issue's command: Dist-n, Sem-Ent and Vendi on conTest/decTest, a CI on every row, a test per pair."""
    out = tmp_path / "lb"
    run = _run("--data-dir", str(shared_data), "--dataset", "contest", "--metric", "distinct_n", "--metric", "sem_ent",
               "--metric", "vendi_score", "--out", str(out))
    assert run.returncode == 0, run.stderr
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert len(board["rows"]) == 15 and all(r["ci_low"] is not None and r["ci_high"] is not None for r in board["rows"])
    pairs = {(p["metric_a"], p["metric_b"]) for p in board["pairs"]}
    assert pairs == {("distinct_n", "sem_ent"), ("distinct_n", "vendi_score"), ("sem_ent", "vendi_score")}
    assert len(board["pairs"]) == 15 and all(p["p_bootstrap"] is not None for p in board["pairs"])


def test_hub_build_writes_the_leaderboard_dataset(board_dir, tmp_path):
    from huggingface_hub import DatasetCard, ModelCard

    from dialeval.hub import repos as hub

    repos = hub.build("acme", tmp_path / "hub", from_index=True, only=[], leaderboard=board_dir)
    folder = tmp_path / "hub" / "datasets" / "dialeval-leaderboard"
    assert [(r.repo_id, r.repo_type, r.folder) for r in repos] == [("acme/dialeval-leaderboard", "dataset", folder)]
    board = json.loads((board_dir / "leaderboard.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (folder / "data" / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows == board["rows"] and (folder / "leaderboard.png").read_bytes()[:4] == b"\x89PNG"
    import datasets

    loaded = datasets.load_dataset(str(folder), "pairs", split="train", cache_dir=str(tmp_path / "hf"))
    assert loaded.num_rows == len(board["pairs"]) and loaded[0]["metric_a"] == board["pairs"][0]["metric_a"]
    card = DatasetCard.load(folder / "README.md")
    assert [c["config_name"] for c in card.data.to_dict()["configs"]] == ["rows", "pairs"]
    for metric in ("distinct_n", "ent_n"):
        model_card = ModelCard("---\n" + (folder / "eval_results" / f"{metric}.yaml").read_text(encoding="utf-8") + "---\n")
        results = model_card.data.eval_results
        mine = [r for r in board["rows"] if r["metric"] == metric]
        assert len(results) == len(mine) == 5
        for res, row in zip(results, mine):
            assert res.metric_value == round(row["value"], 4) and res.dataset_config == row["config"]
            assert res.metric_type == {"spearman": "spearmanr", "oca": "accuracy"}[row["statistic"]]
            assert res.source_url == "https://huggingface.co/datasets/acme/dialeval-leaderboard"
    assert "upload acme/dialeval-leaderboard" in (tmp_path / "hub" / "upload.sh").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="is inside --out"):
        hub.build("acme", board_dir.parent, from_index=True, only=[], leaderboard=board_dir)


def test_plan_reads_the_registry():
    """Every meta-evaluable metric on each dataset config it fits, each dataset's declared stored columns without
    --metric, and a metric whose default model is not here listed as skipped with the probe's reason."""
    from dialeval import registry
    from dialeval.meta import sources

    tasks, skipped = leaderboard.plan()
    skipped_names = {s["metric"] for s in skipped}
    fitting = {(n, d.name, c) for n, (decl, _) in registry.meta_rows().items() for d in sources.declarations().values()
               for c in d.configs if sources.fits(decl, d, c) is None}
    assert {"bleu_1", "bleu_4"} <= {t[0] for t in tasks} and "bleu" not in {t[0] for t in tasks}  # variants as rows
    assert {t for t in tasks if not t[0].startswith("column:")} == {t for t in fitting if t[0] not in skipped_names}
    assert {(m, d) for m, d, _ in tasks if m.startswith("column:")} == {
        ("column:metrics.abs_hds_mean", "contest"), ("column:metrics.SentBert", "contest"),
        *(("column:metrics." + c, "predictive_engagement") for c in (
            "Ruber_Unref_Score", "CTX_Unref_Score", "Eng_Score_MeanPooling", "Eng_Score_MaxPooling"))}
    for s in skipped:
        assert s["reason"] == leaderboard.offline_reason(registry.get(s["metric"]))
    fed_only, _ = leaderboard.plan(datasets=["fed"])
    assert {d for _, d, _ in fed_only} == {"fed"} and not any(m.startswith("column:") for m, _, _ in fed_only)
    assert leaderboard.plan(metrics=["column:metrics.SentBert"])[0] == [
        ("column:metrics.SentBert", "contest", c) for c in ("con_test_200_resp_gen", "dec_test_200_resp_gen")]
    with pytest.raises(ValueError, match="--dataset 'dailydialog' is not known"):
        leaderboard.plan(datasets=["dailydialog"])
