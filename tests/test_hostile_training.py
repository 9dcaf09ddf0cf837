"""Models and training options (issue 21): a pickle-only folder is refused unopened, a classifier with another
head trains a new 2-label head, and impossible training options are one line before anything is read."""

from __future__ import annotations

import builtins
import json
import pickle
import shutil
import time

import pytest
from test_hostile_outputs import SAMPLE, one_error, tree_sums

from dialeval.cli import main
from dialeval.testing.roberta import tiny_nli_model


class _Trap:
    """Unpickling this creates the file ``path``: proof that the pickle ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):  # noqa: ANN204
        return (builtins.open, (self.path, "w"))


@pytest.mark.parametrize("option", ["--batch-size", "--eval-every", "--max-length", "--epochs"])
def test_zero_training_options_are_refused_before_any_work(tmp_path, capsys, option):
    start = time.perf_counter()
    err = one_error(capsys, main(["train-coherence", "--data", str(tmp_path / "missing"), "--encoder", "nope",
                                  "--out", str(tmp_path / "out"), option, "0"]))
    assert time.perf_counter() - start < 1.0
    assert f"{option} 0 is out of range: " in err and not (tmp_path / "out").exists()


def test_bogus_eval_split_is_found_before_training(tmp_path, capsys):
    err = one_error(capsys, main(["train-coherence", "--data", str(SAMPLE), "--split", "test", "--eval-split", "bogus",
                                  "--encoder", "no-such-encoder-loaded-later", "--out", str(tmp_path / "out")]))
    assert "no 'bogus' split" in err and "could not load" not in err


def test_pickle_only_model_folder_is_refused_unopened(tmp_path, capsys):
    folder = tmp_path / "pickled"
    tiny = tiny_nli_model(tmp_path / "tiny")
    shutil.copytree(tiny, folder)
    for f in folder.glob("*.safetensors"):
        f.unlink()
    marker = tmp_path / "PICKLE_RAN"
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Trap(str(marker))))
    before = tree_sums(folder)
    data = tmp_path / "sets.jsonl"
    data.write_text(json.dumps({"predictions": ["a b", "c d"]}) + "\n", encoding="utf-8")
    err = one_error(capsys, main(["score", "--metric", "nli_diversity", "--input", str(data),
                                  "--metric-arg", f"model={folder}"]))
    assert "holds only pickle weights (pytorch_model.bin); dialeval loads safetensors only" in err
    assert not marker.exists() and tree_sums(folder) == before


def test_a_three_class_head_trains_a_new_two_label_head(tmp_path):
    from dialeval.dialstory.coherence import load_for_training

    model, _ = load_for_training(str(tiny_nli_model(tmp_path / "nli")))
    assert model.config.num_labels == 2 and model.classifier.out_proj.out_features == 2


def test_a_three_class_head_is_refused_for_scoring(tmp_path):
    from dialeval.dialstory.coherence import CoherenceScorer

    with pytest.raises(ValueError, match="has 3 labels; train one with `dialeval train-coherence`"):
        CoherenceScorer(tiny_nli_model(tmp_path / "nli"))


def test_offered_lm_name_and_its_path_are_one_cache_entry(tmp_path, monkeypatch):
    from dialeval.models import lm
    from dialeval.models.runtime import MODELS

    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path / "cache"))
    folder = lm._smollm2_target(lm.find_smollm2_gguf())  # where the offered model is converted, under this cache
    folder.mkdir(parents=True)
    (folder / "source.json").write_text("{}", encoding="utf-8")
    other = tmp_path / "cache" / "smollm2-135m-instruct-q4_1-1-2"  # an older conversion is another model
    other.mkdir()
    (other / "source.json").write_text("{}", encoding="utf-8")
    for spelling in (str(folder), f"{folder}/", f"{folder}/./", f"{folder.parent}/../cache/{folder.name}"):
        assert lm.offered_name(spelling) == lm.DEFAULT_LM
    assert lm.offered_name(str(other)) == str(other)
    loads = []
    monkeypatch.setattr(lm, "_load_lm", lambda ident, dtype, dev: loads.append(ident) or object())
    MODELS.clear()
    first = lm.load_lm(lm.DEFAULT_LM, device="cpu", backend="torch")
    assert lm.load_lm(str(folder) + "/", device="cpu", backend="torch") is first and loads == [lm.DEFAULT_LM]
    MODELS.clear()
