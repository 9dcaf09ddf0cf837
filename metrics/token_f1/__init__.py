"""Token F-1: unigram F-1 of the response against its reference (SQuAD/ParlAI normalisation)."""

from dialeval.registry import declare

METRIC = declare(
    __name__,
    name="token_f1",
    title="Token F-1",
    summary="unigram F-1 of the response against its reference (SQuAD/ParlAI normalisation)",
    papers=("Dinan et al. 2019", "Rajpurkar et al. 2016"),
    urls=("https://arxiv.org/abs/1811.01241", "https://aclanthology.org/D16-1264/"),
    inputs="references",
    module="dialeval.metrics.token_f1.token_f1:TokenF1",
    core="dialeval.reference.core:compute_token_f1",
    example={"predictions": ["I went hiking in the mountains this weekend .", "No idea ."],
             "references": [["I spent the weekend hiking in the mountains ."], ["I don't know .", "No idea , sorry ."]]},
    emoji="📐",
    tags=("reference-based", "baseline"),
    order=110,
    meta_levels=("turn",),
    meta_requires=("reference",),
    meta_adapter="dialeval.reference.core:token_f1_adapter",
)
