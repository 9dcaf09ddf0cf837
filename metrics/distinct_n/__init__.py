"""Dist-n / EAD-n: distinct n-grams over total n-grams (Li et al. 2016; Liu et al. 2022; Tevet & Berant 2021)."""

from dialeval.registry import MAX_ORDER, MAX_VOCAB, MAX_WORKERS, Option, declare

METRIC = declare(
    __name__,
    name="distinct_n",
    title="Dist-n",
    summary="distinct n-grams / total n-grams (Li et al. 2016); EAD-n with vocab_size",
    papers=("Li et al. 2016", "Liu et al. 2022", "Tevet & Berant 2021"),
    urls=("https://aclanthology.org/N16-1014/", "https://aclanthology.org/2022.acl-long.86/"),
    inputs="responses",
    module="dialeval.metrics.distinct_n.distinct_n:DistinctN",
    core="dialeval.lexical.core:compute_distinct",
    options=(
        Option("n", None, "ints", "n-gram orders (default 1,2,3; 1..5 for the tevet preset)", widget=True,
               minimum=1, maximum=MAX_ORDER),
        Option("tokenizer", "casual", "str", "casual, whitespace, char or tevet",
               choices=("casual", "whitespace", "char", "tevet"), widget=True),
        Option("level", "corpus", "str", "corpus, or set (mean over response sets)", choices=("corpus", "set")),
        Option("vocab_size", None, "int", "generator vocabulary size for EAD-n (Liu et al. 2022)",
               minimum=2, maximum=MAX_VOCAB),
        Option("num_workers", 0, "int", "worker processes that tokenize large inputs (0: none; identical results)",
               minimum=0, maximum=MAX_WORKERS),
    ),
    plot="dialeval.lexical.plots:plot_distinct",
    example={"predictions": ["I don't know .", "I don't know .", "Sure , let's go to the beach !",
                             "That sounds great , see you at noon ."]},
    emoji="🔤",
    tags=("diversity", "lexical"),
    scale_out="dialeval.lexical.scale_out:scale_out",
    order=10,
    meta_levels=("set",),
    meta_adapter="dialeval.lexical.core:distinct_set_adapter",
)
