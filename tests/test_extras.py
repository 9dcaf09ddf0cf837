"""A missing optional package is one line naming the extra that installs it, in Python and on the command line
(simulated: the module is set to ``None`` in ``sys.modules``, which makes importing it fail as if not installed)."""

from __future__ import annotations

import configparser
import json
import re
import sys
from pathlib import Path

import pytest

import dialeval
from dialeval.cli import main
from dialeval.extras import MODULE_EXTRAS, PACKAGES, MissingExtraError, needs_extras, optional

REPO = Path(__file__).resolve().parents[1]


def hide(monkeypatch, *modules: str) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] in modules] + list(modules):
        monkeypatch.setitem(sys.modules, name, None)


def test_bertscore_without_the_reference_extra_names_it_in_python(monkeypatch):
    hide(monkeypatch, "bert_score")
    module = dialeval.load("bertscore")
    with pytest.raises(MissingExtraError) as err:
        module.compute(predictions=["a cat"], references=["a cat"])
    assert isinstance(err.value, ModuleNotFoundError)  # what callers catch today still catches it
    assert str(err.value) == 'bertscore needs bert-score, which is not installed: pip install "dialeval[reference]"'


def test_bertscore_without_the_reference_extra_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    hide(monkeypatch, "bert_score")
    data = tmp_path / "r.jsonl"
    data.write_text(json.dumps({"predictions": "a cat", "references": "a cat"}) + "\n", encoding="utf-8")
    assert main(["score", "--metric", "bertscore", "--input", str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == 'dialeval score: error: bertscore needs bert-score, which is not installed: ' \
                  'pip install "dialeval[reference]"'


def test_rouge_and_bleu_name_the_reference_extra(monkeypatch):
    from dialeval.reference import overlap

    hide(monkeypatch, "rouge_score", "sacrebleu")
    overlap.sacrebleu_bleu.cache_clear()  # a scorer another test built would not import sacrebleu again
    for name in ("rouge_l", "bleu"):
        with pytest.raises(MissingExtraError, match=re.escape('pip install "dialeval[reference]"')):
            dialeval.load(name).compute(predictions=["a cat"], references=[["a cat"]])


def test_any_optional_import_in_a_block_names_its_extra(monkeypatch):
    hide(monkeypatch, "ray")
    with pytest.raises(MissingExtraError, match=re.escape('the Ray engine needs ray, which is not installed: '
                                                          'pip install "dialeval[distributed]"')):
        with needs_extras("the Ray engine"):
            import ray.data  # noqa: F401
    with pytest.raises(ModuleNotFoundError) as err:  # a module no extra installs: unchanged
        with needs_extras("x"):
            optional("no_such_module_anywhere")
    assert not isinstance(err.value, MissingExtraError)


def test_every_optional_module_is_in_the_extra_it_names():
    """The table agrees with setup.cfg: each module's package is a requirement of the extra the message names."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg", encoding="utf-8")
    extras = {name: {re.split(r"[\[<>=!~ ;]", line.strip())[0].lower().replace("_", "-")
                     for line in value.splitlines() if line.strip() and not line.strip().startswith("#")}
              for name, value in cfg["options.extras_require"].items()}
    for module, extra in MODULE_EXTRAS.items():
        package = PACKAGES.get(module, module).lower().replace("_", "-")
        assert package in extras[extra], (module, extra, sorted(extras[extra]))


@pytest.mark.parametrize(("module", "package", "extra"), [("lighteval", "lighteval", "lighteval"),
                                                        ("inspect", "inspect-ai", "inspect")])
def test_the_integrations_name_their_extra(monkeypatch, module, package, extra):
    import importlib

    hide(monkeypatch, {"lighteval": "lighteval", "inspect": "inspect_ai"}[module])
    monkeypatch.delitem(sys.modules, f"dialeval.integrations.{module}", raising=False)
    with pytest.raises(MissingExtraError) as err:
        importlib.import_module(f"dialeval.integrations.{module}")
    assert str(err.value) == (f"dialeval.integrations.{module} needs {package}, which is not installed: "
                              f'pip install "dialeval[{extra}]"')


def test_the_ray_engine_and_dialgen_name_their_extra(monkeypatch):
    from dialeval.dialstory import dialgen
    from dialeval.distributed import engine

    hide(monkeypatch, "ray", "jieba")
    with pytest.raises(MissingExtraError, match=re.escape('the Ray engine needs ray, which is not installed: '
                                                          'pip install "dialeval[distributed]"')):
        engine.connect(None, timeout=1)
    with pytest.raises(MissingExtraError, match=re.escape('the dialgen metric needs jieba, which is not installed: '
                                                          'pip install "dialeval[models]"')):
        dialgen._require("jieba")
