"""ROUGE-L: longest-common-subsequence F-measure of the response against its references, by rouge-score (Lin 2004)."""

from dialeval.registry import Option, declare

METRIC = declare(
    __name__,
    name="rouge_l",
    title="ROUGE-L",
    summary="longest-common-subsequence F-measure of the response against its references, by rouge-score (Lin 2004)",
    papers=("Lin 2004",),
    urls=("https://aclanthology.org/W04-1013/", "https://pypi.org/project/rouge-score/"),
    inputs="references",
    module="dialeval.metrics.rouge_l.rouge_l:RougeL",
    core="dialeval.reference.core:compute_rouge_l",
    options=(
        Option("use_stemmer", False, "bool", "Porter-stem tokens before matching", widget=True),
        Option("implementation", "default", "str", "scorer: 'default' (the library named above) or 'nlg-eval' (pycocoevalcap 1.2 as nlg-eval runs it, β = 1.2)",
               choices=("default", "nlg-eval")),
    ),
    example={"predictions": ["I went hiking in the mountains this weekend .", "No idea ."],
             "references": [["I spent the weekend hiking in the mountains ."], ["I don't know .", "No idea , sorry ."]]},
    emoji="📐",
    extras=("reference",),
    tags=("reference-based", "baseline"),
    order=114,
    meta_levels=("turn",),
    meta_requires=("reference",),
    meta_adapter="dialeval.reference.core:rouge_l_adapter",
)
