"""USR human judgements (Mehri & Eskenazi, ACL 2020) on TopicalChat and PersonaChat.

``tc_usr_data.json`` / ``pc_usr_data.json``: a JSON array of 60 contexts ``{context, fact, annotators,
responses}``; ``context`` holds ``\\n``-separated turns, ``fact`` the knowledge (TopicalChat facts, PersonaChat
persona lines), and each response ``{response, model, <quality>: [3 scores]}``. One record per response:
``system`` is the response's ``model`` (a decoding strategy or a human), ``reference`` the context's
``Original Ground Truth`` response, ``knowledge`` the fact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialeval.datasets._common import (
    QualityBuilder,
    json_objects,
    parse_scores,
    quality_configs,
    quality_row,
    rated_dataset,
)
from dialeval.io.readers import MalformedDataError, read_json, require_keys, require_str

CITATION = """@inproceedings{mehri-eskenazi-2020-usr,
  title = {{USR}: An Unsupervised and Reference Free Evaluation Metric for Dialog Generation},
  author = {Mehri, Shikib and Eskenazi, Maxine}, booktitle = {Proceedings of ACL}, year = {2020}, pages = {681--707}}
"""
QUALITIES = ("Understandable", "Natural", "Maintains Context", "Engaging", "Uses Knowledge", "Overall")
GROUND_TRUTH = "Original Ground Truth"
#: Where the paper's baseline numbers come from: Mehri & Eskenazi (2020), appendix Tables 5 (Topical-Chat) and 6
#: (PersonaChat), turn-level Spearman and Pearson correlation with the mean Overall Quality rating, over every
#: response but the original ground truth (whose ratings "are not used for evaluation"), the ground truth being
#: the reference.
PUBLISHED_SOURCE = "Mehri & Eskenazi 2020 (USR), appendix Tables 5-6"
#: Why the ground truth's rows are left out, as the paper does: it is every row's reference.
LEFT_OUT = "the reference of every row; the paper does not evaluate on its ratings"


def baselines_line(baselines: dict[str, tuple[float, float]], table: str) -> str:
    """The paper's baseline Spearman ρs as one published-numbers line of the leaderboard: its "Pearson" column, as
    the table's Spearman and Pearson columns are swapped (nlg-eval's scorers reproduce all 24 numbers that way)."""
    return "baselines: " + ", ".join(f"{name} {rho:.3f}" for name, (_, rho) in baselines.items()) + (
        f" (Mehri & Eskenazi 2020, {table}, its Pearson column, which holds Spearman ρ: the columns are swapped; "
        "without the ground-truth rows)")


def usr_records(data: Any, path: Path) -> list[dict[str, Any]]:
    """The response records of a parsed USR file."""
    rows = []
    for c, loc, ctx in json_objects(data, path, "context", "contexts"):
        require_keys(ctx, ("context", "fact", "responses"), loc)
        turns = [t.strip() for t in require_str(ctx["context"], "context", loc).strip("\n").split("\n")]
        fact = require_str(ctx["fact"], "fact", loc)
        responses = ctx["responses"]
        if not isinstance(responses, list) or not responses:
            raise MalformedDataError(f"{loc}: field 'responses' must be a non-empty list.")
        parsed = []
        for _, rloc, resp in json_objects(responses, loc, "response"):
            require_keys(resp, ("response", "model", *QUALITIES), rloc)
            parsed.append((require_str(resp["response"], "response", rloc).strip(),
                           require_str(resp["model"], "model", rloc),
                           {q: parse_scores(resp[q], q, rloc) for q in QUALITIES}))
        truth = next((text for text, model, _ in parsed if model == GROUND_TRUTH), None)
        rows += [quality_row(f"{c}-{r}", turns, ann, response=text, reference=truth, knowledge=fact, system=model)
                 for r, (text, model, ann) in enumerate(parsed)]
    return rows


class _UsrBuilder(QualityBuilder):
    LEVELS = {"turn": "turn"}
    QUALITIES = {"turn": QUALITIES}
    BUILDER_CONFIGS = quality_configs(LEVELS)
    DEFAULT_CONFIG_NAME = "turn"
    CITATION = CITATION
    HOMEPAGE = "http://shikib.com/usr"
    LICENSE = "unknown"

    def records(self, paths: list[Path]) -> Any:
        return usr_records(read_json(paths[0]), paths[0])


class UsrTopicalChatBuilder(_UsrBuilder):
    """USR TopicalChat: 60 contexts × 6 responses (ground truth, argmax, nucleus 0.3/0.5/0.7, new human)."""

    FOLDER = "usr_topicalchat"
    LICENSE = ('Repository ramya2811/GRADE-A-PLUS: no license file. Authors: none stated for the data '
               "(Shikib/usr README only links http://shikib.com/usr; that repo's LICENSE is Apache-2.0 "
               'inherited from HF transformers code). Data license: unknown.')
    FILES = {"turn": ("tc_usr_data.json",)}
    DESCRIPTION = "USR TopicalChat: 360 responses, 6 qualities, 3 annotators each."
    #: The paper's baselines (Table 5) as printed: metric → ("Spearman", "Pearson") with Overall Quality; the two
    #: columns are swapped (the first is Pearson r, the second Spearman ρ: scripts/reproduce_usr_baselines.py).
    PUBLISHED_BASELINES = {
        "token_f1": (0.1645, 0.1690), "bleu_1": (0.2728, 0.2876), "bleu_2": (0.2862, 0.3012),
        "bleu_3": (0.2569, 0.3006), "bleu_4": (0.2160, 0.2956), "meteor": (0.3365, 0.3908),
        "rouge_l": (0.2745, 0.2870), "bertscore": (0.3229, 0.3540)}


class UsrPersonaChatBuilder(_UsrBuilder):
    """USR PersonaChat: 60 contexts × 5 responses (ground truth, KV-MemNN, Seq2Seq, LM, new human)."""

    FOLDER = "usr_personachat"
    LICENSE = ('Repository daqh/llm-eval: no license file. Authors: none stated for the data. Data license: '
               'unknown.')
    FILES = {"turn": ("pc_usr_data.json",)}
    DESCRIPTION = "USR PersonaChat: 300 responses, 6 qualities, 3 annotators each."
    #: The paper's baselines (Table 6) as printed, its two columns swapped as in Table 5.
    PUBLISHED_BASELINES = {
        "token_f1": (0.1422, 0.1241), "bleu_1": (0.0434, 0.0469), "bleu_2": (0.1122, 0.0943),
        "bleu_3": (0.1202, 0.0924), "bleu_4": (0.1353, 0.0899), "meteor": (0.2527, 0.2713),
        "rouge_l": (0.0659, 0.0385), "bertscore": (0.1690, 0.1526)}


#: Both USR sets: rated turns with a ground-truth reference on every row, ``Overall`` in the summary.
DATASETS = (
    rated_dataset("usr_topicalchat", UsrTopicalChatBuilder, "Overall", fields=("reference",),
                  left_out_systems={GROUND_TRUTH: LEFT_OUT}, published={
        ("turn", "annotation_means.Overall", "spearman"): (
            "best of 23: USR 0.423 (Yeh et al. 2021, DialEvalMetrics Table 4)",
            "FED metric -0.135 (Yeh et al. 2021, DialEvalMetrics Table 4)",
            baselines_line(UsrTopicalChatBuilder.PUBLISHED_BASELINES, "Table 5"))}),
    rated_dataset("usr_personachat", UsrPersonaChatBuilder, "Overall", fields=("reference",),
                  left_out_systems={GROUND_TRUTH: LEFT_OUT}, published={
        ("turn", "annotation_means.Overall", "spearman"): (
            "best of 23: USL-H 0.523 (Yeh et al. 2021, DialEvalMetrics Table 4)",
            "FED metric -0.000 (Yeh et al. 2021, DialEvalMetrics Table 4)",
            baselines_line(UsrPersonaChatBuilder.PUBLISHED_BASELINES, "Table 6"))}),
)
