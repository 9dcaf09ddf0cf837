"""The metric registry: a metric declared once in a package of its own shows up everywhere (``dialeval.load``,
``dialeval score``, its help, the demo and ``dialeval hub build``) without touching any other file.

The toy metric ``toy_words`` is written here the way README's "Adding a metric" says: a core function,
one declaration (``__init__.py``), the ``evaluate`` script and its card.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import dialeval
from dialeval import registry

TOY = "toy_words"

CORE = '''
"""The toy metric's math: mean number of whitespace words per response."""


def mean_words(texts):
    if not isinstance(texts, (list, tuple)) or not texts:
        raise ValueError("`predictions` must be a non-empty list of responses.")
    return {"toy_words": sum(len(t.split()) for t in texts) / len(texts), "num_responses": len(texts)}
'''

DECLARATION = '''
"""Toy: mean words per response."""

from dialeval.registry import Option, declare

METRIC = declare(
    __name__,
    name="toy_words",
    title="Toy Words",
    summary="mean number of words per response (a test metric)",
    papers=("Nobody 2026",),
    urls=("https://example.org/toy",),
    inputs="responses",
    module="toypkg.metrics.toy_words.toy_words:ToyWords",
    options=(Option("scale", 1.0, "float", "multiply the mean by this", widget=True),),
    settings=("num_responses",),
    example={"predictions": ["one two three", "four"]},
    order=500,
)
'''

SCRIPT = '''
"""Toy Words as an `evaluate` module."""

import datasets

import dialeval.evaluate_module as base  # the module, not the class: evaluate takes the script's first Metric class
from toypkg.core import mean_words
from toypkg.metrics.toy_words import METRIC


class ToyWords(base.DialevalMetric):
    """Mean words per response, times `scale`."""

    DECLARATION = METRIC

    def _info(self):
        return self.metric_info(datasets.Features({"predictions": datasets.Value("string")}), "predictions")

    def _compute(self, predictions, scale):
        out = mean_words(predictions)
        out["toy_words"] *= scale
        out["signature"] = "toy_words|v1"
        return out
'''

CARD = '''---
title: Toy Words
description: Mean number of words per response.
---

# Metric Card for Toy Words

Mean number of whitespace-separated words per response.
'''


@pytest.fixture()
def toy_package(tmp_path, monkeypatch):
    """``toypkg`` (core + one metric folder) on ``sys.path`` and ``PYTHONPATH``, named in
    ``DIALEVAL_METRIC_PACKAGES``."""
    root = tmp_path / "site"
    folder = root / "toypkg" / "metrics" / TOY
    folder.mkdir(parents=True)
    (root / "toypkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "toypkg" / "core.py").write_text(textwrap.dedent(CORE), encoding="utf-8")
    (root / "toypkg" / "metrics" / "__init__.py").write_text("", encoding="utf-8")
    (folder / "__init__.py").write_text(textwrap.dedent(DECLARATION), encoding="utf-8")
    (folder / f"{TOY}.py").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    (folder / "README.md").write_text(CARD, encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv(registry.PACKAGES_ENV, "toypkg.metrics")
    yield root
    for name in [m for m in sys.modules if m == "toypkg" or m.startswith("toypkg.")]:
        sys.modules.pop(name)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dialeval", *args], capture_output=True, text=True, timeout=300)


def test_toy_metric_is_declared_and_loads(toy_package):
    assert TOY in dialeval.METRICS and dialeval.METRICS[-1] == TOY  # plugins after the built-ins (order=500)
    assert registry.by_input("responses")[-1].name == TOY
    m = dialeval.load(TOY)
    assert m.OPTIONS == {"scale": 1.0}
    out = m.compute(predictions=["one two three", "four"], scale=2.0)
    assert out["toy_words"] == 4.0 and out["num_responses"] == 2  # (3 + 1) / 2 words, times 2


def test_toy_metric_in_the_cli_and_its_help(toy_package, tmp_path):
    texts = tmp_path / "responses.txt"
    texts.write_text("a b c\nd e\n", encoding="utf-8")
    proc = run_cli("score", "--metric", TOY, "--input", str(texts), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[TOY]["toy_words"] == 2.5  # (3 + 2) / 2
    helped = run_cli("score", "--help")
    text = " ".join(helped.stdout.split())  # argparse wraps lines
    assert helped.returncode == 0 and f"{TOY}: mean number of words per response" in text


def test_toy_metric_in_the_demo_and_its_widget(toy_package):
    from dialeval import ui
    from dialeval.demo import build_demo, evaluate_texts

    demo = build_demo(examples_dir=None)
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert f"use-{TOY}" in ids and f"model-{TOY}" not in ids  # no model, so no (hidden) model input
    assert ui.availability(TOY) == (True, "ready")
    outcomes, status = evaluate_texts({"responses": "a b\nc d e f"}, {TOY: None})
    assert outcomes[0].result["toy_words"] == 3.0 and "1 of 1 metrics computed" in status
    rows = ui.result_rows(outcomes)
    assert rows == [[TOY, "toy_words", 3.0, "", "toy_words|v1", "num_responses=2"]]  # a setting, not a score
    widget = ui.metric_widget(TOY)
    boxes = {b.elem_id: b.value for b in widget.blocks.values() if getattr(b, "elem_id", None)}
    assert boxes[f"{TOY}-responses"] == "one two three\nfour"  # opens on the declared example
    assert boxes["option-scale"] == 1.0  # the widget=True option


def test_toy_metric_in_hub_build(toy_package, tmp_path):
    from dialeval.hub import repos as hub

    repos = hub.build("toy-org", tmp_path / "hub", from_index=True, only=[TOY])
    space = tmp_path / "hub" / "spaces" / TOY
    assert [r.repo_id for r in repos] == [f"toy-org/{TOY}"]
    assert (space / f"{TOY}.py").read_text(encoding="utf-8") == textwrap.dedent(SCRIPT)
    assert f'metric_widget("{TOY}",' in (space / "app.py").read_text(encoding="utf-8")
    assert "Toy Words" in (space / "README.md").read_text(encoding="utf-8")


def test_toy_metric_in_lighteval_and_inspect(toy_package):
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    from dialeval.integrations import inspect as di
    from dialeval.integrations import lighteval as dl

    adapted = dl.metric(TOY, scale=2.0)  # a plugin is adapted from its declaration, as a corpus-level metric
    assert type(adapted).__name__ == "CorpusLevelMetric" and TOY in dl.metrics() and TOY in di.scorers()
    docs = [Doc(query="q", choices=[""], gold_index=0) for _ in range(2)]
    items = [adapted.compute_sample(doc=d, model_response=ModelResponse(text=[t]))[TOY]
             for d, t in zip(docs, ["one two three", "four"])]
    # (3 + 1) / 2 words, times 2; num_responses is a declared setting, not a score
    assert adapted.get_corpus_aggregations()[TOY](items) == {f"{TOY}/toy_words": 4.0}


def test_every_declaration_is_complete():
    """Each built-in metric: script and card present, module class bound to its declaration, a worked
    example whose inputs its module accepts."""
    for name, decl in registry.declarations().items():
        assert (decl.script_dir / f"{name}.py").is_file() and decl.card().startswith("---")
        assert decl.module_class().DECLARATION is decl
        assert decl.example, name
        assert (decl.summary and decl.title and decl.papers), name


def test_meta_evaluation_reads_the_declarations(toy_package):
    """``meta-eval`` offers exactly the metrics that declare ``meta_levels``; a metric fits a dataset config by its
    level, protocol and required row fields; a declaration naming an unknown level, a non-set metric without an
    adapter, or the old ``meta_datasets`` is refused when declared."""
    from dialeval.meta import sources
    from dialeval.meta.evaluation import make_adapter

    assert {n: (d.meta_levels, d.meta_protocols, d.meta_requires) for n, d in registry.meta_evaluable().items()} == {
        "distinct_n": (("set",), (), ()), "ent_n": (("set",), (), ()), "full_followup": (("turn", "dialog"), (), ()),
        "sem_ent": (("set",), (), ()), "nli_diversity": (("set",), (), ()), "sent_bert_diversity": (("set",), (), ()),
        "vendi_score": (("set",), (), ()), "quality_vendi": (("set",), (), ()),
        "llm_judge": (("turn", "dialog"), ("rated",), ()), "context_relevance": (("turn", "dialog"), ("rated",), ()),
        "learned_quality": (("turn", "dialog"), ("rated",), ()),
        **dict.fromkeys(("token_f1", "bleu", "chrf", "meteor", "rouge_l", "bertscore"), (("turn",), (), ("reference",)))}
    fitting = {n: sorted({d.name for d in sources.declarations().values() for c in d.configs
                          if sources.fits(decl, d, c) is None}) for n, decl in registry.meta_evaluable().items()}
    rated = ["conture", "dailydialog_zhao", "dstc10_esl", "dstc10_jsalt", "dstc9_interactive", "fed", "grade",
             "holistic_pang2020", "predictive_engagement", "usr_personachat", "usr_topicalchat"]
    assert fitting["distinct_n"] == ["contest"] and fitting["llm_judge"] == rated
    assert fitting["full_followup"] == sorted([*rated, "dailydialog_plusplus"])
    # the reference-based metrics: the datasets whose every row carries a reference other than the rated response
    # (JSALT's references are its responses)
    assert fitting["bleu"] == ["dailydialog_zhao", "dstc10_esl", "grade", "usr_personachat", "usr_topicalchat"]
    with pytest.raises(ValueError, match=r"toy_words is corpus-level .* covers \['bertscore', 'bleu', 'bleu_1'.*'distinct_n', 'ent_n'"):
        make_adapter(TOY, "contest", "c")
    base = dict(name="x", title="X", summary="s", papers=("p",), urls=("u",), module="m:C")
    reference_metric = registry.MetricDeclaration(inputs="turns", meta_levels=("turn",), meta_requires=("reference",),
                                                  meta_adapter="m:f", **base)
    assert sources.fits(reference_metric, sources.get("usr_topicalchat"), "turn") is None
    assert "needs row field(s) ['reference']" in sources.fits(reference_metric, sources.get("fed"), "turn")
    assert "is dialog-level" in sources.fits(reference_metric, sources.get("dstc9_interactive"), "dialog")
    with pytest.raises(ValueError, match=r"meta_levels \['sentence'\] are not among"):
        registry.MetricDeclaration(inputs="response_sets", meta_levels=("sentence",), **base)
    with pytest.raises(ValueError, match="meta_levels need a meta_adapter"):
        registry.MetricDeclaration(inputs="turns", meta_levels=("turn",), **base)
    with pytest.raises(TypeError, match=r"meta_levels must be a tuple, e.g. \('turn',\)"):
        registry.MetricDeclaration(inputs="turns", meta_levels="turn", meta_adapter="m:f", **base)
    with pytest.raises(ValueError, match="meta_adapter without meta_levels"):
        registry.MetricDeclaration(inputs="turns", meta_adapter="m:f", **base)
    with pytest.raises(TypeError, match="meta_datasets is replaced by a declaration by kind"):
        registry.MetricDeclaration(inputs="turns", meta_datasets=("fed",), meta_adapter="m:f", **base)
    for decl in registry.meta_evaluable().values():
        assert decl.meta_adapter is None or callable(decl.meta_adapter_factory()), decl.name
