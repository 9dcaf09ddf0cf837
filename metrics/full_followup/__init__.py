"""FULL: likelihood of negative follow-ups after a response or dialogue (De Bruyn et al. 2022)."""

from dialeval.registry import MAX_BATCH, MAX_LENGTH, MAX_TOKENS, MAX_TURNS, Option, declare

METRIC = declare(
    __name__,
    name="full_followup",
    title="FULL",
    summary="likelihood of negative follow-ups after the dialogue (De Bruyn et al. 2022)",
    papers=("De Bruyn et al. 2022",),
    urls=("https://github.com/maximedb/full", "https://pypi.org/project/full/"),
    inputs="dialogues",
    module="dialeval.metrics.full_followup.full_followup:FullFollowup",
    core="dialeval.full.full_followup:compute_full_inputs",
    configs=("turn", "dialog"),
    ui_config="dialog",
    options=(
        Option("model", None, "model", "LM: Hub id or local path (None = offline SmolLM2-135M-Instruct)"),
        Option("follow_ups", None, "texts", "negative follow-ups (default: the paper's five)"),
        Option("compat", None, "str", "None, or full-0.0.3 to reproduce the `full` package",
               choices=(None, "full-0.0.3"), widget=True),
        Option("separator", None, "str", "after each turn (None: the measured default, ' ' for SmolLM2, '\\n' "
               "otherwise)"),
        Option("max_length", None, "int", "left-truncate the history to this many tokens (None: the model's "
               "limit, at most 1024 for causal LMs, 512 for SmolLM2)", minimum=1, maximum=MAX_LENGTH),
        Option("lookback", 50, "int", "turns kept in compat mode", minimum=1, maximum=MAX_TURNS),
        Option("batch_size", 16, "int", "sequences per batch", minimum=1, maximum=MAX_BATCH),
        Option("max_tokens", None, "int", "token budget per batch", minimum=1, maximum=MAX_TOKENS),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16"),
        Option("device", None, "str", "cpu, cuda or None (auto)"),
        Option("backend", None, "str", "None (ONNX Runtime on CPU in fp32 when installed, else torch), torch, onnx "
               "or onnx-int8",
               choices=(None, "torch", "onnx", "onnx-int8")),
        Option("progress", None, "bool", "show progress bars"),
        Option("follow_up_prefix", "", "str", "text before each follow-up, e.g. 'User: ' (default mode)"),
        Option("chat_template", False, "bool", "write history and follow-up through the tokenizer's chat template"),
        Option("aggregation", None, "str", "per follow-up: mean or sum of token NLLs (default mode; None: sum for "
               "causal LMs, measured; mean for seq2seq)", choices=(None, "mean", "sum")),
    ),
    model_option="model",
    models=("smollm2-135m-instruct-gguf", "facebook/blenderbot-400M-distill", "facebook/blenderbot-1B-distill"),
    probe="dialeval.models.probes:probe_lm",
    loader="dialeval.models.lm:load_lm",
    plot="dialeval.full.plots:plot_full",
    settings=("max_length",),
    example={"dialogues": [["Hi! How was your weekend?", "Great, I went hiking in the mountains.",
                            "Oh nice, which trail did you take?", "The ridge trail, the views were amazing."]]},
    emoji="💬",
    tags=("dialogue", "quality", "language-model"),
    scale_out="dialeval.full.scale_out:scale_out",
    order=70,
    meta_levels=("turn", "dialog"),
    meta_adapter="dialeval.full.full_followup:full_fed_adapter",
)
