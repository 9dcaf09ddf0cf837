"""The integrations page's LightEval and Inspect AI blocks (docs/integrations.md), run as written (offline, in a
scratch folder), give the numbers of ``dialeval.load(...).compute(...)`` on the generations they scored."""

import re
from pathlib import Path

import dialeval

REPO = Path(__file__).resolve().parents[1]

PAGE = "docs/integrations.md"


def readme_block(heading: str) -> str:
    text = REPO.joinpath(PAGE).read_text(encoding="utf-8")
    match = re.search(rf"\n{re.escape(heading)}\n.*?```python\n(.*?)```", text, re.S)
    assert match, f"{PAGE} has no python block under {heading!r}"
    return match.group(1)


def run_block(heading: str, folder, monkeypatch) -> dict:
    monkeypatch.chdir(folder)
    namespace: dict = {"__name__": "readme"}
    exec(compile(readme_block(heading), f"{PAGE} {heading}", "exec"), namespace)
    return namespace


def test_readme_lighteval_block(tmp_path, monkeypatch):
    ns = run_block("## LightEval", tmp_path, monkeypatch)
    details = ns["pipeline"].evaluation_tracker.details_logger.details["my_dialogues|0"]
    generations = [d.model_response.final_text[0] for d in details]
    assert len(generations) == 3
    distinct = dialeval.load("distinct_n").compute(predictions=generations)
    ent = dialeval.load("ent_n").compute(predictions=generations, n=[1, 2])
    expected = {f"distinct_n/{k}": distinct[k] for k in ("distinct_1", "distinct_2", "distinct_3", "distinct_mean")}
    expected.update({"ent_n/ent_1": ent["ent_1"], "ent_n/ent_2": ent["ent_2"]})
    assert dict(ns["results"]) == expected


def test_readme_inspect_block(tmp_path, monkeypatch):
    ns = run_block("## Inspect AI", tmp_path, monkeypatch)
    samples = sorted(ns["log"].samples, key=lambda s: s.id)
    completions = [s.output.completion for s in samples]
    assert sorted(completions) == sorted(ns["replies"])
    distinct = dialeval.load("distinct_n").compute(predictions=completions)
    for key in ("distinct_1", "distinct_2", "distinct_3", "distinct_mean"):
        assert ns["metrics"][f"distinct_n/{key}"] == distinct[key]
    ent = dialeval.load("ent_n").compute(predictions=completions, n=[1, 2])
    assert {k: v for k, v in ns["metrics"].items() if k.startswith("ent_n/")} == {"ent_n/ent_1": ent["ent_1"],
                                                                                 "ent_n/ent_2": ent["ent_2"]}
