"""The README's USR baseline table is the committed result file, and the file holds what the code computes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from scipy.stats import pearsonr, spearmanr

from dialeval.datasets.usr import UsrPersonaChatBuilder, UsrTopicalChatBuilder
from dialeval.reference.core import compute_bleu, compute_rouge_l, compute_token_f1

REPO = Path(__file__).resolve().parents[1]
RESULT = json.loads((REPO / "docs" / "results" / "usr_baselines.json").read_text(encoding="utf-8"))
sys.path.insert(0, str(REPO / "scripts"))
import reproduce_usr_baselines as reproduce  # noqa: E402


def test_the_readme_table_is_generated_from_the_result_file():
    assert reproduce.markdown(RESULT) in (REPO / "README.md").read_text(encoding="utf-8")
    assert RESULT["command"] in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_published_numbers_are_the_builders():
    for name, builder in (("usr_topicalchat", UsrTopicalChatBuilder), ("usr_personachat", UsrPersonaChatBuilder)):
        for row in RESULT["datasets"][name]["rows"]:
            assert (row["published_spearman"], row["published_pearson"]) == builder.PUBLISHED_BASELINES[row["row"]]


@pytest.mark.parametrize("name", ["usr_topicalchat", "usr_personachat"])
def test_cheap_rows_recomputed_with_scipy(name, shared_data):
    rows = reproduce.usr_rows(name, shared_data)
    assert len(rows) == RESULT["datasets"][name]["n"] == {"usr_topicalchat": 300, "usr_personachat": 240}[name]
    human = [r["annotation_means"]["Overall"] for r in rows]
    preds, refs = [r["response"] for r in rows], [r["reference"] for r in rows]
    stored = {(r["row"], r["options"].get("implementation")): r for r in RESULT["datasets"][name]["rows"]}
    for key, scores in ((("token_f1", None), compute_token_f1(preds, refs)["scores"]),
                        (("bleu_2", "nlg-eval"), compute_bleu(preds, refs, max_order=2, implementation="nlg-eval")["scores"]),
                        (("rouge_l", "nlg-eval"), compute_rouge_l(preds, refs, implementation="nlg-eval")["scores"])):
        assert stored[key]["spearman"] == pytest.approx(spearmanr(scores, human)[0], abs=1e-12)
        assert stored[key]["pearson"] == pytest.approx(pearsonr(scores, human)[0], abs=1e-12)


def test_nlg_eval_reproduces_all_24_published_numbers_with_the_columns_swapped():
    rows = [r for data in RESULT["datasets"].values() for r in data["rows"]
            if r["options"].get("implementation") == "nlg-eval"]
    assert sorted({r["row"] for r in rows}) == ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "meteor", "rouge_l"]
    assert len(rows) == 12
    for r in rows:  # the paper's "Spearman" column is Pearson r, its "Pearson" column Spearman ρ
        assert abs(r["pearson"] - r["published_spearman"]) < 1e-3, r["row"]
        assert abs(r["spearman"] - r["published_pearson"]) < 1e-3, r["row"]
    assert reproduce.reproduced(RESULT)[:2] == (12, 12)
    assert "Spearman and Pearson columns swapped" in (REPO / "README.md").read_text(encoding="utf-8")
