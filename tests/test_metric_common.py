"""One common test over every declared metric (as huggingface/evaluate's tests/test_metric_common.py):
the module's ``_compute`` takes exactly the declared options as explicit parameters, the card's examples run
as doctests, the signature has the sacrebleu-style format, metadata is declared once, and every metric folder
is part of the package (setup.cfg) and loads from the checkout root with ``evaluate.load("metrics/<name>")``."""

from __future__ import annotations

import configparser
import doctest
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dialeval
from dialeval import registry

REPO = Path(__file__).resolve().parents[1]
DECLS = registry.declarations()
NAMES = sorted(DECLS)
SIGNATURE = re.compile(r"^(?P<name>[a-z_0-9]+)(\|[a-z_0-9]+:[^|]*)*\|version:\d+\.\d+\.\d+\S*$")


def _input_names(cls: type, config: str | None) -> set[str]:
    module = cls(config_name=config) if config else cls()
    features = module.info.features
    formats = features if isinstance(features, list) else [features]
    return {name for fmt in formats for name in fmt}


@pytest.mark.parametrize("name", NAMES)
def test_compute_takes_exactly_the_declared_options(name):
    decl = DECLS[name]
    cls = decl.module_class()
    params = inspect.signature(cls._compute).parameters
    assert not [p for p in params.values() if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)], \
        f"{name}: _compute takes **kwargs/*args; declare its options explicitly"
    inputs = set().union(*(_input_names(cls, c if c != "default" else None) for c in decl.configs))
    inputs |= set(getattr(cls, "CALL_INPUTS", ()))  # inputs given to compute alone (e.g. speakers), not options
    explicit = {p for p in params if p != "self" and not p.startswith("_")} - inputs
    assert explicit == {o.name for o in decl.options}, name


@pytest.mark.parametrize("name", NAMES)
def test_metadata_is_declared_once(name):
    decl = DECLS[name]
    module = decl.module_class()(**({"config_name": decl.configs[0]} if decl.configs != ("default",) else {}))
    info = module.info
    assert info.citation == decl.citation and decl.citation.startswith("@")  # the card's BibTeX block
    assert list(info.reference_urls) == list(decl.urls)
    script = (decl.script_dir / f"{name}.py").read_text(encoding="utf-8")
    assert "http" not in script and "@inproceedings" not in script and "@article" not in script, \
        f"{name}: URLs and citations belong to the declaration and the card, not the script"


def _card_examples(name: str) -> list[doctest.Example]:
    card = re.sub(r"(?m)^```\w*$", "", DECLS[name].card())  # a fence line ends the expected output
    return doctest.DocTestParser().get_examples(card)


# The default model of nli_diversity (roberta-large-mnli) is a Hub id with no offline copy here; its card's
# examples name that model, so they are parsed (valid doctest syntax) but not run.
NEEDS_HUB = {n for n, d in DECLS.items() if d.needs_model and d.probe_function()
             and d.probe_function()(d.option_defaults()[d.model_option] or d.models[0]) is not None}


@pytest.mark.parametrize("name", NAMES)
def test_card_examples_run_as_doctests(name):
    examples = _card_examples(name)
    if name in NEEDS_HUB:
        assert name == "nli_diversity", f"{name}'s default model should load offline"
        return
    assert examples, f"{name}'s card has no >>> example"
    test = doctest.DocTest(examples, {"dialeval": dialeval}, name, f"{name}/README.md", 0, None)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=lambda text: sys.stderr.write(text))
    assert runner.failures == 0, f"{name}: {runner.failures} card example(s) failed (see stderr)"


@pytest.mark.parametrize("name", [n for n in NAMES if not DECLS[n].needs_model] + ["sem_ent"])
def test_signature_format_on_the_declared_example(name):
    from dialeval.resources import semantic_space_dir

    decl = DECLS[name]
    extra = {"space": str(semantic_space_dir())} if name == "sem_ent" else {}
    result = dialeval.load(name, **extra).compute(**decl.example)
    match = SIGNATURE.match(result["signature"])
    assert match and match["name"] == name, result["signature"]
    assert result["signature"].endswith(f"version:{dialeval.__version__}")


def test_setup_cfg_packages_every_metric_folder():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    packages = set(cfg["options"]["packages"].split())
    folders = {p.name for p in (REPO / "metrics").iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(NAMES)
    assert {f"dialeval.metrics.{f}" for f in folders} <= packages
    assert "dialeval.metrics = metrics" in cfg["options"]["package_dir"]


def test_evaluate_load_from_the_checkout_root_for_every_metric(tmp_path):
    """``evaluate.load("metrics/<name>")`` from the checkout root computes every metric (model metrics on tiny
    local models)."""
    from dialeval.resources import semantic_space_dir
    from dialeval.testing.blenderbot import build_tiny_causal_lm
    from dialeval.testing.roberta import tiny_nli_model

    options = {
        "sem_ent": {"space": str(semantic_space_dir())},
        "nli_diversity": {"model": str(tiny_nli_model(tmp_path / "nli")), "device": "cpu"},
        "full_followup": {"model": str(build_tiny_causal_lm(tmp_path / "lm")), "device": "cpu"},
        "llm_judge": {"model": str(tmp_path / "lm"), "device": "cpu"},
        "quality_vendi": {"quality_model": str(tmp_path / "lm"), "device": "cpu"},
    }
    code = """
import json, sys, evaluate
examples, options, configs = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = {}
for name, example in examples.items():
    module = evaluate.load("metrics/" + name, configs[name], **options.get(name, {}))
    out[name] = module.compute(**example)["signature"]
print(json.dumps(out))
"""
    examples = {n: DECLS[n].example for n in NAMES}
    configs = {n: DECLS[n].ui_config for n in NAMES}  # the config whose inputs the declared example holds
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(examples), json.dumps(options), json.dumps(configs)],
                          cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    signatures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(signatures) == NAMES
    assert all(signatures[n].startswith(n + "|") for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_core_takes_every_option_with_the_declared_default(name):
    decl = DECLS[name]
    core = decl.core_function()
    params = inspect.signature(core).parameters
    if name == "full_followup":  # compute_full_inputs passes options on to compute_full
        from dialeval.full.full_followup import compute_full

        params = {**params, **inspect.signature(compute_full).parameters}
    for option in decl.options:
        assert option.name in params, f"{name}: core {decl.core} does not take option {option.name!r}"
        default = params[option.name].default
        if default is not inspect.Parameter.empty:
            assert default == option.default, (name, option.name, default, option.default)


@pytest.mark.parametrize("name", [n for n in NAMES if not DECLS[n].needs_model] + ["sem_ent"])
def test_core_equals_the_module_on_the_declared_example(name):
    decl = DECLS[name]
    from_core = decl.core_function()(**decl.example)
    from_module = dialeval.load(name).compute(**decl.example)
    assert from_core == from_module


FAMILIES = ("lexical", "semantic", "nli", "full", "dialstory", "similarity", "judge", "reference", "relevance")


def test_no_file_outside_the_metric_cores_names_a_metric():
    """One home per metric: outside its family's core folder (and its declaration folder and card, which live
    in metrics/), no library file names it; the layers read the declarations instead."""
    src = REPO / "src" / "dialeval"
    offenders = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if rel.parts[0] in FAMILIES:
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{rel}: {name}" for name in NAMES if re.search(rf"(?<![A-Za-z0-9]){name}(?![A-Za-z0-9])", text)]
    assert offenders == []
