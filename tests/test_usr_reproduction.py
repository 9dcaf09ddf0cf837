"""The README's USR baseline table is the committed result file, and the file holds what the code computes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from scipy.stats import pearsonr, spearmanr

from dialeval.datasets.usr import UsrPersonaChatBuilder, UsrTopicalChatBuilder
from dialeval.reference.core import compute_bleu, compute_token_f1

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
    stored = {(r["row"], r["options"].get("smooth")): r for r in RESULT["datasets"][name]["rows"]}
    for key, scores in ((("token_f1", None), compute_token_f1(preds, refs)["scores"]),
                        (("bleu_2", "none"), compute_bleu(preds, refs, max_order=2, smooth="none")["scores"])):
        assert stored[key]["spearman"] == pytest.approx(spearmanr(scores, human)[0], abs=1e-12)
        assert stored[key]["pearson"] == pytest.approx(pearsonr(scores, human)[0], abs=1e-12)
