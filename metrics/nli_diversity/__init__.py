"""NLI Diversity: pairwise NLI contradictions within a response set (Stasaski & Hearst 2022)."""

from dialeval.registry import Option, declare

METRIC = declare(
    __name__,
    name="nli_diversity",
    title="NLI Diversity",
    summary="contradictions minus entailments within each response set (Stasaski & Hearst 2022)",
    papers=("Stasaski & Hearst 2022",),
    urls=("https://aclanthology.org/2022.naacl-main.6/",),
    inputs="response_sets",
    module="dialeval.metrics.nli_diversity.nli_diversity:NLIDiversity",
    options=(
        Option("model", "roberta-large-mnli", "model", "NLI model: Hub id or local path"),
        Option("variant", "baseline", "str",
               "baseline, neutral, confidence (the paper's §3.3) or confidence_soft (Σ P(c) − P(e), not the paper's)",
               choices=("baseline", "neutral", "confidence", "confidence_soft"), widget=True),
        Option("device", None, "str", "cpu, cuda or None (auto)"),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16"),
        Option("batch_size", 32, "int", "pairs per batch"),
        Option("max_tokens", None, "int", "token budget per batch instead of a fixed batch size"),
        Option("max_length", None, "int", "truncate each pair to this many tokens"),
        Option("return_probabilities", False, "bool", "return each pair's class probabilities"),
        Option("progress", None, "bool", "show progress bars"),
    ),
    model_option="model",
    models=("roberta-large-mnli", "microsoft/deberta-large-mnli"),
    probe="dialeval.probes:probe_model",
    plot="dialeval.nli.plots:plot_nli",
    ui_options={"return_probabilities": True},
    example={"predictions": [["I love cats .", "I hate cats .", "Cats are great ."],
                             ["Let's meet at noon .", "Noon works for me .", "I can't make it at noon ."]]},
    emoji="🔀",
    tags=("diversity", "semantic", "nli"),
    scale_out="dialeval.nli.scale_out:scale_out",
    order=60,
    meta_datasets=("contest",),
)
