"""The leaderboard's options and plugins against a fourth hostile pass: a variant row whose --metric-arg contradicts
its name, a --metric-arg of a metric not scored, --out -, a --scores name that would break the Markdown table, a
plugin module that does not import, a plugin named like a built-in, a plugin that returns too few scores, raises, or
edits its rows in place."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from dialeval import registry
from dialeval.cli import main
from dialeval.meta import leaderboard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rows import items, means, write_jsonl  # noqa: E402
from plugin_rows import forget, install_plugin  # noqa: E402

E = str(Path(__file__).resolve().parents[1] / "docs" / "examples" / "ratings.jsonl")


def _cli(capsys, *argv: str) -> tuple[int, list[str]]:
    rc = main(list(argv))
    return rc, capsys.readouterr().err.strip().splitlines()


def _one_line(capsys, tmp_path, *argv: str, match: str) -> None:
    rc, err = _cli(capsys, *argv)
    assert rc == 2 and len(err) == 1 and err[0].startswith("dialeval "), err
    assert match in err[0], err[0]
    assert not (tmp_path / "r5").exists()


def test_a_variant_row_refuses_an_option_that_contradicts_its_name(tmp_path, capsys):
    base = ["leaderboard", "--data", E, "--overall", "relevance", "--metric", "bleu_2", "--out", str(tmp_path / "r5")]
    _one_line(capsys, tmp_path, *base, "--metric-arg", "bleu_2:max_order=4",
              match="--metric-arg bleu_2:max_order=4 contradicts the row 'bleu_2', which is bleu with max_order=2")
    with pytest.raises(ValueError, match="contradicts the row 'bleu_2'"):
        leaderboard.build(None, tmp_path / "r6", data=[E], overall="relevance", metrics=["bleu_2"],
                          metric_args={"bleu_2": {"max_order": 4}}, log=lambda _: None, n_resamples=100)


def test_a_metric_arg_of_a_metric_not_scored_is_an_error(tmp_path, capsys):
    _one_line(capsys, tmp_path, "leaderboard", "--data", E, "--overall", "relevance", "--metric", "bleu_2",
              "--metric-arg", "token_f1:lowercase=false", "--out", str(tmp_path / "r5"),
              match="--metric-arg token_f1:lowercase=…: 'token_f1' is not scored in this run (scored: ['bleu_2'])")


def test_out_dash_is_refused_and_no_folder_named_dash_is_made(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_line(capsys, tmp_path, "leaderboard", "--data", E, "--overall", "relevance", "--metric", "bleu_2",
              "--out", "-", match="--out '-': the leaderboard writes a folder")
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("name", ["a|b", "two\nlines"])
def test_a_scores_name_that_would_break_the_table_is_refused(tmp_path, capsys, name):
    scores = tmp_path / "s.jsonl"
    scores.write_text('{"id": "d1", "score": 1}\n', encoding="utf-8")
    _one_line(capsys, tmp_path, "leaderboard", "--data", E, "--overall", "relevance", "--scores",
              f"{name}={scores}", "--out", str(tmp_path / "r5"), match="must be printable text on one line without '|'")
    with pytest.raises(ValueError, match="without '|'"):
        leaderboard.build(None, tmp_path / "r6", data=[E], overall="relevance", scores={name: scores},
                          log=lambda _: None, n_resamples=100)


def test_a_metric_package_that_does_not_import_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(registry.PACKAGES_ENV, "dialeval_no_such_plugin")
    for argv in (["leaderboard", "--data", E, "--metric", "bleu_2", "--out", str(tmp_path / "r5")],
                 ["score", "--metric", "distinct_n", "--input", E]):
        _one_line(capsys, tmp_path, *argv, match="DIALEVAL_METRIC_PACKAGES: the metric package "
                                                 "'dialeval_no_such_plugin' does not import")
    with pytest.raises(ValueError, match="does not import"):
        registry.declarations()


BUILTIN_NAMED = '''
from dialeval.registry import declare

METRIC = declare(__name__, name="token_f1", title="x", summary="x", papers=("none",), urls=("none",),
                 inputs="turns", module="x:y", meta_levels=("turn",), meta_adapter="x:y")
'''


def test_a_plugin_named_like_a_built_in_metric_is_one_line(tmp_path, capsys, monkeypatch):
    root = tmp_path / "site" / "shadowplug"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text(BUILTIN_NAMED, encoding="utf-8")
    monkeypatch.syspath_prepend(str(root.parent))
    monkeypatch.setenv(registry.PACKAGES_ENV, "shadowplug")
    try:
        _one_line(capsys, tmp_path, "leaderboard", "--data", E, "--metric", "token_f1", "--out",
                  str(tmp_path / "r5"), match="the plugin metric 'token_f1' (shadowplug) has the name of a built-in")
    finally:
        forget("shadowplug")


ADAPTERS = {
    "short": 'def factory(options, config):\n    return lambda rows: {"scores": [1.0] * (len(rows) - 1), '
             '"signature": "p"}\n',
    "raises": 'def factory(options, config):\n    def score(rows):\n        raise KeyError("response_text")\n'
              '    return score\n',
    "mutates": 'def factory(options, config):\n    def score(rows):\n        out = [float(len(r["response"])) for r in rows]\n'
               '        for r in rows:\n            r["response"] = None\n            r["annotation_means"].clear()\n'
               '        return {"scores": out, "signature": "p"}\n    return score\n',
}


@pytest.fixture
def plugin(tmp_path, monkeypatch, request):
    name = f"badplug_{request.param}"
    install_plugin(tmp_path / "site", monkeypatch, name, {"adapter.py": ADAPTERS[request.param]})
    yield name
    forget(name)


@pytest.mark.parametrize("plugin,message", [
    ("short", "badplug_short (plugin badplug_short) returned 39 scores for 40 rows"),
    ("raises", "badplug_raises (plugin badplug_raises) failed on 40 rows: KeyError: 'response_text'"),
], indirect=["plugin"])
def test_a_plugin_that_returns_too_few_scores_or_raises_is_one_line_naming_it(tmp_path, capsys, plugin, message):
    data = write_jsonl(tmp_path / "d.jsonl", items(40))
    _one_line(capsys, tmp_path, "leaderboard", "--data", str(data), "--metric", plugin, "--out", str(tmp_path / "r5"),
              match=message)


@pytest.mark.parametrize("plugin", ["mutates"], indirect=True)
def test_a_plugin_that_edits_its_rows_changes_no_other_metric(tmp_path, plugin):
    rows = items(40, varied_words=True)
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    report = leaderboard.build(None, tmp_path / "lb", data=[data], metrics=[plugin, "column:mine"], n_resamples=100,
                               log=lambda _: None)
    got = {(r["metric"], r["target"]): r["value"] for r in report["rows"] if r["statistic"] == "spearman"
           and r.get("level") == "item"}
    mine = np.array([r["mine"] for r in rows])
    lengths = np.array([len(r["response"]) for r in rows], dtype=float)
    for quality in ("relevance", "fluency"):
        y = means(rows, quality)
        assert got[("column:mine", f"annotation_means.{quality}")] == pytest.approx(
            sps.spearmanr(mine, y).statistic, abs=1e-12)
        assert got[(plugin, f"annotation_means.{quality}")] == pytest.approx(
            sps.spearmanr(lengths, y).statistic, abs=1e-12)
