"""DialSpk: DialStory speaker recognition accuracy, DAC (turns) and SAC (stories) (Yao et al. 2022)."""

from dialeval.registry import Option, declare

METRIC = declare(
    __name__,
    name="dialspk",
    title="DialSpk",
    summary="speaker recognition accuracy: DAC (turns) and SAC (stories) (Yao et al. 2022)",
    papers=("Yao et al. 2022",),
    urls=("https://arxiv.org/abs/2209.08524",),
    inputs="speakers",
    module="dialeval.metrics.dialspk.dialspk:DialSpk",
    core="dialeval.dialstory.dialspk:compute_dialspk",
    options=(Option("candidates", None, "any", "per story, the candidate speaker names"),),
    plot="dialeval.dialstory.plots:plot_dialspk",
    example={"predictions": [["Alice", "Bob", "Alice"], ["Carol", "Dan"]],
             "references": [["Alice", "Bob", "Bob"], ["Carol", "Dan"]]},
    emoji="🗣️",
    tags=("dialogue", "story", "speaker-recognition"),
    scale_out="dialeval.dialstory.scale_out:dialspk_scale_out",
    order=40,
)
