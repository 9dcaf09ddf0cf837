"""DailyDialog++ (Sai et al., TACL 2020): contexts with 5 human-written positive responses and 5
adversarial and 5 random negative responses each.

Files (JSON Lines): ``dev.json`` / ``test.json`` with ``id, context, positive_responses,
adversarial_negative_responses, random_negative_responses``; ``data_positives.json`` with
``dialog_id, context, positive_responses`` (config ``positives``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from dialeval.datasets._common import STRINGS, find_file, resolve_data_dir
from dialeval.io.readers import read_jsonl, require_int, require_keys, require_str_list, where
from dialeval.meta.sources import DatasetDeclaration

CITATION = """@article{sai-etal-2020-improving,
  title = {Improving Dialog Evaluation with a Multi-reference Adversarial Dataset and Large Scale Pretraining},
  author = {Sai, Ananya B. and Mohankumar, Akash Kumar and Arora, Siddhant and Khapra, Mitesh M.},
  journal = {Transactions of the Association for Computational Linguistics}, volume = {8}, year = {2020},
  pages = {810--827}}
"""

RESPONSE_FIELDS = ("positive_responses", "adversarial_negative_responses", "random_negative_responses")
FEATURES = {
    "default": datasets.Features({
        "id": datasets.Value("int64"),
        "context": STRINGS,
        **{f: STRINGS for f in RESPONSE_FIELDS},
    }),
    "positives": datasets.Features({
        "id": datasets.Value("int64"),
        "context": STRINGS,
        "positive_responses": STRINGS,
    }),
}
SPLIT_FILES = {
    # the original `dev` split is exported under the standard name `validation` (recorded in the card)
    "default": {"validation": ["dev.json", "dev.jsonl"], "test": ["test.json", "test.jsonl"]},
    "positives": {"train": ["data_positives.json", "data_positives.jsonl"]},
}


def parse_record(obj: dict[str, Any], config: str, loc: str) -> dict[str, Any]:
    """Validate one JSON Lines record (types, required fields) and map it to :data:`FEATURES`."""
    id_key = "dialog_id" if config == "positives" else "id"
    fields = ("positive_responses",) if config == "positives" else RESPONSE_FIELDS
    require_keys(obj, (id_key, "context", *fields), loc)
    row = {"id": require_int(obj[id_key], id_key, loc), "context": require_str_list(obj["context"], "context", loc, min_len=1)}
    for f in fields:
        row[f] = require_str_list(obj[f], f, loc, min_len=1)
    return row


class DailyDialogPlusPlusBuilder(datasets.GeneratorBasedBuilder):
    """DailyDialog++ builder; ``data_dir`` holds ``dev.json``, ``test.json`` (and ``data_positives.json``)."""

    VERSION = datasets.Version("1.1.0")  # 1.1: ClassLabel columns / standard split names
    BUILDER_CONFIGS = [
        datasets.BuilderConfig(name="default", version=VERSION, description="dev/test with positives and negatives"),
        datasets.BuilderConfig(name="positives", version=VERSION, description="data_positives.json (5 positives)"),
    ]
    DEFAULT_CONFIG_NAME = "default"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="DailyDialog++: multi-reference positive and adversarial/random negative responses.",
            features=FEATURES[self.config.name],
            citation=CITATION,
            homepage="https://iitmnlp.github.io/DailyDialog-plusplus/",
            license="unknown (contexts from DailyDialog, CC BY-NC-SA 4.0)",
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        root = resolve_data_dir(self.config.data_dir, "dailydialog_plusplus")
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"path": find_file(root, names, f"DailyDialog++ {split}")})
            for split, names in SPLIT_FILES[self.config.name].items()
        ]

    def _generate_examples(self, path: Path) -> Any:
        for lineno, obj in read_jsonl(path):
            yield lineno, parse_record(obj, self.config.name, where(path, lineno))


#: Each (context, response) of the test split is one scored row, labelled 1 (positive), 0 (random negative) or
#: −1 (adversarial negative); ROC AUC of positives against each kind of negative. ``--max-rows`` counts contexts.
DATASET = DatasetDeclaration(
    name="dailydialog_plusplus", protocol="pairs", folder="dailydialog_plusplus",
    description="a context and one response, positive or negative (DailyDialog++, AUCs)",
    levels={"default": "turn"},
    pairs=(("positive_responses", 1.0), ("random_negative_responses", 0.0), ("adversarial_negative_responses", -1.0)),
    pair_targets=(("positive_vs_random", 1.0, 0.0), ("positive_vs_adversarial", 1.0, -1.0)),
    published={
        ("default", "positive_vs_adversarial", "auc"): (
            "FULL 0.611 (SmolLM2 default, first 100 contexts, one pair each; FULL card)",),
        ("default", "positive_vs_random", "auc"): (
            "FULL 0.590 (SmolLM2 default, first 100 contexts, one pair each; FULL card)",)},
)
