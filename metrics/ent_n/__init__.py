"""Ent-n: entropy of the corpus n-gram distribution (Zhang et al. 2018; Sem-Ent reference code)."""

from dialeval.registry import MAX_ORDER, MAX_WORKERS, Option, declare

METRIC = declare(
    __name__,
    name="ent_n",
    title="Ent-n",
    summary="entropy of the n-gram distribution (bits by default)",
    papers=("Zhang et al. 2018", "Han et al. 2022"),
    urls=("https://aclanthology.org/2022.findings-emnlp.100/",),
    inputs="responses",
    module="dialeval.metrics.ent_n.ent_n:EntN",
    core="dialeval.lexical.core:compute_ent",
    options=(
        Option("n", None, "ints", "n-gram orders (default 1,2,3)", widget=True, minimum=1, maximum=MAX_ORDER),
        Option("tokenizer", "casual", "str", "casual, whitespace, char or tevet",
               choices=("casual", "whitespace", "char", "tevet"), widget=True),
        Option("base", 2.0, "float", "logarithm base (2 = bits, e = nats)", minimum=1, exclusive_minimum=True),
        Option("num_workers", 0, "int", "worker processes that tokenize large inputs (0: none; identical results)",
               minimum=0, maximum=MAX_WORKERS),
    ),
    plot="dialeval.lexical.plots:plot_entropy",
    units={"ent_*": "bits"},  # the UI computes with the default base 2
    example={"predictions": ["I don't know .", "I don't know .", "Sure , let's go to the beach !",
                             "That sounds great , see you at noon ."]},
    emoji="📊",
    tags=("diversity", "lexical"),
    scale_out="dialeval.lexical.scale_out:scale_out",
    order=20,
    meta_levels=("set",),
    meta_adapter="dialeval.lexical.core:ent_set_adapter",
)
