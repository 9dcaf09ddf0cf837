"""METEOR: unigram matches with stems and WordNet synonyms and a fragmentation penalty, by nltk (Banerjee & Lavie 2005)."""

from dialeval.registry import Option, declare

METRIC = declare(
    __name__,
    name="meteor",
    title="METEOR",
    summary="unigram matches with stems and WordNet synonyms and a fragmentation penalty, by nltk (Banerjee & Lavie 2005)",
    papers=("Banerjee & Lavie 2005",),
    urls=("https://aclanthology.org/W05-0909/", "https://www.nltk.org/api/nltk.translate.meteor_score.html"),
    inputs="references",
    module="dialeval.metrics.meteor.meteor:Meteor",
    core="dialeval.reference.core:compute_meteor",
    options=(
        Option("alpha", 0.9, "float", "precision weight α of F_mean", minimum=0, maximum=1),
        Option("beta", 3.0, "float", "fragmentation penalty exponent β", minimum=0, maximum=100),
        Option("gamma", 0.5, "float", "fragmentation penalty weight γ", minimum=0, maximum=1),
        Option("implementation", "default", "str", "scorer: 'default' (the library named above) or 'nlg-eval' (pycocoevalcap 1.2 as nlg-eval runs it: METEOR 1.5 on Java)",
               choices=("default", "nlg-eval")),
    ),
    example={"predictions": ["I went hiking in the mountains this weekend .", "No idea ."],
             "references": [["I spent the weekend hiking in the mountains ."], ["I don't know .", "No idea , sorry ."]]},
    emoji="📐",
    extras=("reference",),
    system_packages=("wordnet-base",),
    tags=("reference-based", "baseline"),
    order=113,
    meta_levels=("turn",),
    meta_requires=("reference",),
    meta_adapter="dialeval.reference.core:meteor_adapter",
)
