"""LF: share of low-frequency tokens (Li et al. 2020; Sem-Ent reference code)."""

from dialeval.registry import MAX_COUNT, MAX_WORKERS, Option, declare

METRIC = declare(
    __name__,
    name="low_frequency",
    title="LF",
    summary="share of tokens whose frequency is at most a threshold (Li et al. 2020)",
    papers=("Li et al. 2020", "Han et al. 2022"),
    urls=("https://openreview.net/forum?id=S1efxTVYDr",),
    inputs="responses",
    module="dialeval.metrics.low_frequency.low_frequency:LowFrequency",
    core="dialeval.lexical.core:compute_low_frequency",
    options=(
        Option("threshold", 100, "int", "a token is rare when its count is at most this", widget=True,
               minimum=0, maximum=MAX_COUNT),
        Option("tokenizer", "casual", "str", "casual, whitespace, char or tevet",
               choices=("casual", "whitespace", "char", "tevet"), widget=True),
        Option("reference_counts", None, "any", "token → count mapping to judge rarity by"),
        Option("reference_texts", None, "texts", "texts to count tokens in instead of the predictions"),
        Option("num_workers", 0, "int", "worker processes that tokenize large inputs (0: none; identical results)",
               minimum=0, maximum=MAX_WORKERS),
    ),
    example={"predictions": ["I don't know .", "I don't know .", "Sure , let's go to the beach !",
                             "That sounds great , see you at noon ."]},
    emoji="🪶",
    tags=("diversity", "lexical"),
    scale_out="dialeval.lexical.scale_out:scale_out",
    order=30,
)
