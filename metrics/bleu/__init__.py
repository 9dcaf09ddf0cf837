"""BLEU: sentence BLEU-n of the response against its references, by sacrebleu (Papineni et al. 2002)."""

from dialeval.registry import Option, declare

METRIC = declare(
    __name__,
    name="bleu",
    title="BLEU",
    summary="sentence BLEU-n of the response against its references, by sacrebleu (Papineni et al. 2002)",
    papers=("Papineni et al. 2002", "Post 2018"),
    urls=("https://aclanthology.org/P02-1040/", "https://aclanthology.org/W18-6319/"),
    inputs="references",
    module="dialeval.metrics.bleu.bleu:Bleu",
    core="dialeval.reference.core:compute_bleu",
    options=(
        Option("max_order", 4, "int", "n of BLEU-n: the largest n-gram order (1-4)", widget=True, minimum=1, maximum=4),
        Option("smooth", "exp", "str", "sacrebleu smoothing", choices=("exp", "floor", "add-k", "none")),
        Option("tokenize", "13a", "str", "sacrebleu tokenizer", choices=("13a", "intl", "char", "none")),
        Option("lowercase", False, "bool", "lower-case before matching"),
        Option("implementation", "default", "str", "scorer: 'default' (the library named above) or 'nlg-eval' (pycocoevalcap 1.2 as nlg-eval runs it, smoothing 1e-15/1e-9)",
               choices=("default", "nlg-eval")),
    ),
    example={"predictions": ["I went hiking in the mountains this weekend .", "No idea ."],
             "references": [["I spent the weekend hiking in the mountains ."], ["I don't know .", "No idea , sorry ."]]},
    emoji="📐",
    extras=("reference",),
    tags=("reference-based", "baseline"),
    order=111,
    meta_levels=("turn",),
    meta_requires=("reference",),
    meta_adapter="dialeval.reference.core:bleu_adapter",
    meta_variants={"bleu_1": {"max_order": 1}, "bleu_2": {"max_order": 2}, "bleu_3": {"max_order": 3}, "bleu_4": {"max_order": 4}},
)
