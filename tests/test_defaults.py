"""The same defaults everywhere: with no space given, Sem-Ent scores in the bundled space whether it is
loaded with ``evaluate.load(<folder>)``, ``dialeval.load`` or run as ``dialeval score`` (its fingerprint in
each signature); FULL loads without a config name (its first declared config) through ``evaluate.load``
as through ``dialeval.load``."""

from __future__ import annotations

import json

import evaluate
import pytest

import dialeval
from dialeval import registry
from dialeval.cli import main
from dialeval.resources import semantic_space_dir

RESPONSES = ["How are you today?", "I'm fine, thanks.", "What time is it?", "I'm fine, thank you."]


def test_sem_ent_default_space_is_the_bundled_one_everywhere(tmp_path, capsys):
    bundled = json.loads((semantic_space_dir() / "space.json").read_text(encoding="utf-8"))
    explicit = dialeval.load("sem_ent").compute(predictions=RESPONSES, space=str(semantic_space_dir()))
    by_folder = evaluate.load(str(registry.get("sem_ent").script_dir)).compute(predictions=RESPONSES)
    by_name = dialeval.load("sem_ent").compute(predictions=RESPONSES)
    path = tmp_path / "responses.txt"
    path.write_text("\n".join(RESPONSES) + "\n", encoding="utf-8")
    assert main(["score", "--metric", "sem_ent", "--input", str(path), "--json"]) == 0
    printed = capsys.readouterr().out
    by_cli = json.loads(printed[printed.index("{"):])
    by_cli = by_cli.get("sem_ent", by_cli)
    for result in (by_folder, by_name, by_cli):
        assert result["sem_ent"] == explicit["sem_ent"]
        assert result["signature"] == explicit["signature"]
        assert f"space:{bundled['fingerprint']}" in result["signature"]


def test_full_loads_without_a_config_name(tmp_path):
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    model = str(build_tiny_causal_lm(tmp_path / "lm"))
    folder = str(registry.get("full_followup").script_dir)
    first = registry.get("full_followup").configs[0]
    module = evaluate.load(folder)
    assert module.config_name == first == dialeval.load("full_followup").config_name
    kwargs = {"contexts": [["User: Hi!", "System: Hello."]], "predictions": ["User: How are you?"], "model": model}
    assert module.compute(**kwargs) == dialeval.load("full_followup", first).compute(**kwargs)
    with pytest.raises(ValueError, match=r"evaluate\.load\(PATH_OR_HUB_ID, 'dialog'\)"):
        evaluate.load(folder, "bogus")


def test_automatic_progress_bars_stay_silent_on_tiny_inputs(capsys, monkeypatch):
    """No bar for work that ends within the delay; an explicit ``progress=True`` shows one at once."""
    from dialeval.models.runtime import run_batched

    monkeypatch.delenv("DIALEVAL_PROGRESS", raising=False)
    items = ["a", "bb", "ccc"]
    assert run_batched(items, lambda b: [len(x) for x in b], lengths=[1, 2, 3], batch_size=1, desc="tiny job") == [1, 2, 3]
    assert "tiny job" not in capsys.readouterr().err
    run_batched(items, lambda b: [len(x) for x in b], lengths=[1, 2, 3], batch_size=1, desc="shown job", progress=True)
    assert "shown job" in capsys.readouterr().err
