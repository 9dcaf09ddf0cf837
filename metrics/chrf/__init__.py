"""chrF: character n-gram F-score of the response against its references, by sacrebleu (Popović 2015)."""

from dialeval.registry import Option, declare

METRIC = declare(
    __name__,
    name="chrf",
    title="chrF",
    summary="character n-gram F-score of the response against its references, by sacrebleu (Popović 2015)",
    papers=("Popović 2015", "Post 2018"),
    urls=("https://aclanthology.org/W15-3049/", "https://aclanthology.org/W18-6319/"),
    inputs="references",
    module="dialeval.metrics.chrf.chrf:Chrf",
    core="dialeval.reference.core:compute_chrf",
    options=(
        Option("char_order", 6, "int", "largest character n-gram order", minimum=1, maximum=10),
        Option("word_order", 0, "int", "largest word n-gram order (2 = chrF++)", widget=True, minimum=0, maximum=4),
        Option("beta", 2, "int", "recall weight β", minimum=1, maximum=10),
    ),
    example={"predictions": ["I went hiking in the mountains this weekend .", "No idea ."],
             "references": [["I spent the weekend hiking in the mountains ."], ["I don't know .", "No idea , sorry ."]]},
    emoji="📐",
    extras=("reference",),
    tags=("reference-based", "baseline"),
    order=112,
    meta_levels=("turn",),
    meta_requires=("reference",),
    meta_adapter="dialeval.reference.core:chrf_adapter",
)
