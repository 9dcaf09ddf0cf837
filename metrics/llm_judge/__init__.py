"""LLM judge: G-Eval's probability-weighted 1–5 rating from a rubric prompt (Liu et al. 2023; Kim et al. 2024)."""

from dialeval.registry import MAX_BATCH, MAX_LENGTH, MAX_TOKENS, Option, declare

METRIC = declare(
    __name__,
    name="llm_judge",
    title="LLM judge",
    summary="expected 1–5 rating of a rubric prompt over a chat LM's next-token probabilities (G-Eval)",
    papers=("Liu et al. 2023", "Kim et al. 2024"),
    urls=("https://aclanthology.org/2023.emnlp-main.153/", "https://github.com/prometheus-eval/prometheus-eval"),
    inputs="dialogues",
    module="dialeval.metrics.llm_judge.llm_judge:LlmJudge",
    core="dialeval.judge.llm_judge:compute_llm_judge",
    configs=("turn", "dialog"),
    ui_config="dialog",
    options=(
        Option("quality", "overall", "str", "the quality to rate: a default rubric's name (FED's and USR's "
               "qualities, e.g. overall, engaging, coherent) or any name with your own rubric"),
        Option("rubric", None, "str", "your own rubric text (None: the default rubric of the quality)"),
        Option("model", None, "model", "causal chat LM: Hub id or local path (None = offline SmolLM2-135M-Instruct)"),
        Option("chat_template", None, "bool", "render the prompt with the tokenizer's chat template (None: when it "
               "has one)"),
        Option("max_length", None, "int", "prompt tokens at most (None: 2048); the oldest turns are dropped first",
               minimum=64, maximum=MAX_LENGTH),
        Option("share_prefix", True, "bool", "run the rubric prefix once and every item on its key/value cache"),
        Option("batch_size", 8, "int", "prompts per batch", minimum=1, maximum=MAX_BATCH),
        Option("max_tokens", 4096, "int", "padded tokens per batch", minimum=1, maximum=MAX_TOKENS),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16"),
        Option("device", None, "str", "cpu, cuda or None (auto)"),
        Option("backend", None, "str", "None (ONNX Runtime on CPU in fp32 when installed, else torch), torch, onnx "
               "or onnx-int8", choices=(None, "torch", "onnx", "onnx-int8")),
        Option("progress", None, "bool", "show progress bars"),
    ),
    model_option="model",
    models=("smollm2-135m-instruct-gguf", "gemma3-270m-gguf", "Qwen/Qwen2.5-7B-Instruct",
            "prometheus-eval/prometheus-7b-v2.0"),
    probe="dialeval.models.probes:probe_lm",
    loader="dialeval.models.lm:load_lm",
    example={"dialogues": [["Hi! How was your weekend?", "Great, I went hiking in the mountains.",
                            "Oh nice, which trail did you take?", "The ridge trail, the views were amazing."]]},
    emoji="⚖️",
    tags=("dialogue", "quality", "language-model", "llm-as-a-judge"),
    order=75,
    # every human-judged quality dataset (dialeval.registry.QUALITY_CONFIGS), each at its level with the rubric of its
    # overall quality; the 135M judge takes 2 to 9 min per dataset on one thread (card), USR TopicalChat's long
    # histories over 30 min and DSTC9's 2,200 dialogues more (not measured).
    meta_levels=("turn", "dialog"),
    meta_protocols=("rated",),
    meta_adapter="dialeval.judge.adapter:judge_adapter",
)
