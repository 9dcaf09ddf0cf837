"""DialGen: DialStory masked dialogue generation, BLEU-1/2 per turn, Dist-2/3/4 and a coherence
classifier's score (Yao et al. 2022)."""

from dialeval.registry import MAX_BATCH, Option, declare

METRIC = declare(
    __name__,
    name="dialgen",
    title="DialGen",
    summary="DialStory masked dialogue generation: BLEU-1/2 averaged per turn, Dist-2/3/4, coherence "
            "(Yao et al. 2022)",
    papers=("Yao et al. 2022",),
    urls=("https://arxiv.org/abs/2209.08524",),
    inputs="story_turns",
    module="dialeval.metrics.dialgen.dialgen:DialGen",
    core="dialeval.dialstory.dialgen:compute_dialgen",
    options=(
        Option("tokenization", "char", "str", "char (character level, sacrebleu zh) or jieba (word level)",
               choices=("char", "jieba"), widget=True),
        Option("smooth", "none", "str", "sacrebleu sentence-BLEU smoothing (none = pure overlap)",
               choices=("none", "floor", "add-k", "exp")),
        Option("quotes", "keep", "str", "keep (turns as given) or strip (drop enclosing quotation marks first)",
               choices=("keep", "strip")),
        Option("stories", None, "texts", "per story, the masked story with [MASK1]…[MASKn] (for coherence)"),
        Option("coherence_model", None, "path", "a classifier from `dialeval train-coherence` (folder or Hub id)"),
        Option("device", None, "str", "cpu, cuda or auto"),
        Option("batch_size", 16, "int", "coherence batch size", minimum=1, maximum=MAX_BATCH),
        Option("backend", None, "str", "coherence classifier: None (ONNX Runtime on CPU when installed, else "
               "torch), torch, onnx or onnx-int8", choices=(None, "torch", "onnx", "onnx-int8")),
    ),
    settings=("num_stories", "num_turns"),
    example={"predictions": [["我们明天去公园吧。", "好的"]],
             "references": [["明天我们一起去公园。", "好的，没问题"]]},
    emoji="📖",
    tags=("dialogue", "story", "generation", "chinese"),
    extras=("models",),  # sacrebleu, jieba (and torch for the coherence classifier)
    scale_out="dialeval.dialstory.scale_out:dialgen_scale_out",
    order=45,
)
