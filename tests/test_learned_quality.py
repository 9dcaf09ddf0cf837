"""The learned evaluator: a tiny training on a slice of DailyDialog learns and resumes exactly; the shipped
weights are checked; scores equal the heads applied to a plain torch forward of the tuned encoder."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import dialeval
from dialeval.relevance import evaluator, trainer
from dialeval.relevance import training as T

pytestmark = pytest.mark.slow

TINY = T.TrainConfig(max_dialogues=24, batch_dialogues=8, epochs=2, checkpoint_every=2, warmup_steps=2,
                     lr_layers=1e-4, lr_heads=3e-3)


@pytest.fixture(scope="module")
def tiny(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "evaluator"
    meta = trainer.train_evaluator(shared_data / "dailydialog", out, config=TINY, progress=False, echo=lambda s: None)
    return out, meta


def test_a_tiny_training_learns_both_signals(tiny):
    _out, meta = tiny
    # chance is 1 in 10 for the next utterance and 1 in 2 for valid utterances (the untrained head's 0.5)
    assert meta["proxy"]["next_utterance_accuracy"] >= 0.3
    assert meta["proxy_before"]["valid_utterance_accuracy"] == pytest.approx(0.5, abs=0.1)
    assert meta["proxy"]["valid_utterance_accuracy"] > meta["proxy_before"]["valid_utterance_accuracy"]
    assert meta["train_dialogues"] == 24 and meta["steps"] == 6
    assert meta["rival_train_contexts"] == 24 and "rival_nce" in meta["final_loss"]  # max_dialogues caps the rivals too


def test_a_killed_run_resumes_to_the_same_weights(tiny, shared_data, tmp_path, monkeypatch):
    out, _meta = tiny
    real = T.step_loss
    calls = {"n": 0}

    def dies_at_step_3(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(T, "step_loss", dies_at_step_3)
    with pytest.raises(KeyboardInterrupt):
        trainer.train_evaluator(shared_data / "dailydialog", tmp_path / "again", config=TINY, progress=False,
                                echo=lambda s: None)
    assert json.loads((tmp_path / "again.work" / trainer.CHECKPOINT_STATE).read_text())["step"] == 1
    monkeypatch.setattr(T, "step_loss", real)
    meta = trainer.train_evaluator(shared_data / "dailydialog", tmp_path / "again", config=TINY, progress=False,
                                   echo=lambda s: None)
    first = json.loads((out / trainer.DELTA_META).read_text())
    assert meta["sha256"] == first["sha256"]  # bit for bit: batches, perturbations and heads come from the seed


def test_a_checkpoint_of_another_configuration_is_refused(tiny, shared_data, tmp_path, monkeypatch):
    """A --work-dir holding another configuration's checkpoint is refused before the corpus is read."""
    import dialeval.relevance.corpus as corpus

    out, _ = tiny
    work = tmp_path / "w"
    shutil.copytree(out.parent / "evaluator.work", work)
    other = T.TrainConfig(**{**T.config_dict(TINY), "seed": 1})

    def no_reading(*args, **kwargs):
        raise AssertionError("the corpus was read before the checkpoint was checked")

    monkeypatch.setattr(corpus, "load_corpus", no_reading)
    with pytest.raises(ValueError, match="holds a checkpoint of another configuration"):
        trainer.train_evaluator(shared_data / "dailydialog", tmp_path / "o", config=other, work_dir=work,
                                progress=False, echo=lambda s: None)


def _torch_reference(folder, contexts, responses, turns):
    """``{composition: scores}``: U·S and USL-H's (U + U·S + U·S·L) / 3 from a plain transformers forward of the
    merged encoder (mean pooling, L2 norm), the context the last ``turns`` turns' embeddings weighted 1, 1/2, 1/4, …
    from the last back and scaled to unit length, the heads in numpy and the stored unigram table, written out
    here: independent of the encoder route the metric runs on."""
    import torch
    from safetensors.numpy import load_file
    from transformers import AutoModel, AutoTokenizer

    tensors = load_file(str(folder / evaluator.DELTA_FILE))
    path = evaluator.tuned_encoder_folder(tensors, json.loads((folder / evaluator.DELTA_META).read_text())["sha256"])
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()

    def embed(texts):
        batch = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.inference_mode():
            hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"][..., None].float()
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        return torch.nn.functional.normalize(pooled, dim=-1).double().numpy()

    h = {k[5:]: v.astype(np.float64) for k, v in tensors.items() if k.startswith("head.")}
    r = np.asarray(embed(responses))
    c = []
    for context in contexts:
        window = context[-turns:]
        weights = np.array([0.5 ** (len(window) - 1 - i) for i in range(len(window))])
        pooled = (weights[:, None] * embed(window)).sum(0) / weights.sum()
        c.append(pooled / np.linalg.norm(pooled))
    c = np.stack(c)
    mapped = c @ h["context_map.weight"].T + h["context_map.bias"]
    cos = (mapped * r).sum(1) / np.linalg.norm(mapped, axis=1)
    from scipy.special import erf

    if "pair.0.weight" in h:  # h(c', r) = w2·GELU(W1 [c', r, c'⊙r, |c' − r|] + b1) + b2 on the unit mapped context
        unit = mapped / np.linalg.norm(mapped, axis=1, keepdims=True)
        y = np.concatenate([unit, r, unit * r, np.abs(unit - r)], axis=1) @ h["pair.0.weight"].T + h["pair.0.bias"]
        cos = cos + (0.5 * y * (1 + erf(y / np.sqrt(2)))) @ h["pair.2.weight"][0] + h["pair.2.bias"][0]
    p_next = 1 / (1 + np.exp(-(h["calibration"][0] * cos + h["calibration"][1])))
    z = r @ h["valid.0.weight"].T + h["valid.0.bias"]
    gelu = 0.5 * z * (1 + erf(z / np.sqrt(2)))
    p_valid = 1 / (1 + np.exp(-(gelu @ h["valid.2.weight"][0] + h["valid.2.bias"][0])))
    nll = np.array([-sum(h["specificity.log_prob"][t] for t in tok(x, add_special_tokens=False)["input_ids"])
                    for x in responses])
    q25, q75 = h["specificity.quartiles"]
    specific = np.minimum(1.0, np.maximum(0.0, (nll - q25) / (q75 - q25)))
    return {"product": p_valid * p_next, "usl_h": (p_valid + p_valid * p_next + p_valid * p_next * specific) / 3}


# fp32 encoders (ONNX Runtime against torch, either CPU kernel family): embeddings agree to ~1e-6 relative; the
# heads (a 384x384 map, a sigmoid of slope |a| ≤ ~30) amplify that to at most ~1e-4 absolute on a probability.
PROB_TOL = 2e-4


@pytest.mark.parametrize(("composition", "turns"), [("product", 3), ("usl_h", 3), ("product", 1), ("product", 2)])
def test_scores_equal_the_heads_on_a_plain_torch_forward(tiny, composition, turns):
    out, _ = tiny
    contexts = [["Do you like jazz?"], ["I lost my keys.", "Where did you see them last?"],
                ["We should plan the trip.", "Sure, when?", "Next weekend works for me.", "Where shall we go?"]]
    responses = ["I love it, especially Coltrane.", "jazz jazz jazz the the", "The coast, if the weather holds."]
    options = {} if turns == 3 else {"turns": turns}  # 3: the default
    got = dialeval.load("learned_quality", "turn", weights=str(out), composition=composition, **options).compute(
        contexts=contexts, predictions=responses)
    np.testing.assert_allclose(got["scores"], _torch_reference(out, contexts, responses, turns)[composition],
                               atol=PROB_TOL)
    assert got["signature"].startswith("learned_quality|level:turn|weights:learned_quality@")
    assert f"|turns:{turns}|" in got["signature"]
    assert f"|score:{composition}|" in got["signature"]
    no_context = evaluator.compute_learned_quality([[]], ["Sure, why not?"], weights=out, composition=composition)
    assert no_context["next_utterance"] == [None]
    u, sp = no_context["valid_utterance"][0], no_context["specificity"][0]
    expected = u if composition == "product" else (u + u + u * sp) / 3  # nothing to follow: S = 1
    assert no_context["scores"] == pytest.approx([expected], rel=1e-12)


def test_an_unknown_composition_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"`composition`='usl' is not one of \['product', 'usl_h'\]"):
        evaluator.compute_learned_quality([["Hi"]], ["Hello"], composition="usl")


def test_changed_weights_are_refused_in_one_line(tiny, tmp_path):
    out, _ = tiny
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    data = bytearray((bad / evaluator.DELTA_FILE).read_bytes())
    data[-1] ^= 1
    (bad / evaluator.DELTA_FILE).write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not match evaluator.json") as err:
        evaluator.compute_learned_quality([["Hi"]], ["Hello"], weights=bad)
    assert "\n" not in str(err.value)
    with pytest.raises(FileNotFoundError, match="holds no evaluator.safetensors"):
        evaluator.compute_learned_quality([["Hi"]], ["Hello"], weights=tmp_path)
    for text, named in (("[1, 2]", "a JSON object is expected, not list"), ("{not json", "not JSON")):
        (bad / evaluator.DELTA_META).write_text(text)
        with pytest.raises(ValueError, match=named) as err:
            evaluator.read_delta(bad)
        assert "\n" not in str(err.value)


def test_the_shipped_weights_match_their_card_and_size():
    folder = evaluator.default_weights()
    _tensors, meta, digest = evaluator.read_delta(folder)
    assert (folder / evaluator.DELTA_FILE).stat().st_size <= 25_000_000
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert digest in card and "CC BY-NC-SA 4.0" in card
    assert meta["config"] == T.config_dict(T.TrainConfig())  # the documented command's defaults made them
    assert "copy_weight" not in meta["config"] and T.config_dict(T.TrainConfig(copy_weight=0.1))["copy_weight"] == 0.1
    rows = {"next-utterance accuracy": "next_utterance_accuracy", "valid-utterance accuracy": "valid_utterance_accuracy",
            "ranking accuracy, product": "ranking_accuracy_product", "ranking accuracy, usl_h": "ranking_accuracy_usl_h"}
    for label, key in rows.items():  # the card's proxy table is the run's record
        line = next(x for x in card.splitlines() if x.startswith(f"| {label}"))
        assert line.endswith(f"| {meta['proxy_before'][key]:.3f} | {meta['proxy'][key]:.3f} |"), line
    quartiles = ", ".join(f"{q:.2f}" for q in meta["specificity"]["nll_quartiles"])
    for fact in (f"{meta['bytes']:,} bytes", f"the other {meta['train_dialogues']:,}", f"{meta['steps']} steps",
                 f"{meta['specificity']['tokens']:,}\n  tokens", f"quartiles [{quartiles}]",
                 f"{meta['train_seconds']:,.0f} s on 2 cores"):  # the card's facts are the run's record
        assert fact in card, fact


def test_the_model_cards_context_table_is_the_proxy_result_file():
    """The model card's table of context windows is ``docs/results/learned_quality_context_proxy.json``'s, and that
    file was made with the shipped weights."""
    from pathlib import Path

    result = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results" /
                         "learned_quality_context_proxy.json").read_text(encoding="utf-8"))
    folder = evaluator.default_weights()
    digest = evaluator.read_delta(folder)[2]
    assert result["weights"] == f"learned_quality@{digest[:12]}"
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert result["command"] in " ".join(card.split())
    for row in result["rows"]:
        line = next(x for x in card.splitlines() if x.startswith("| ") and f"`turns={row['turns']}`" in x)
        cells = [c.strip(" *") for c in line.strip("|").split("|")]
        assert cells[1:] == [f"{row['ranking_accuracy_product']:.3f}", f"{row['next_utterance_accuracy']:.3f}"], line


def test_the_model_cards_run_f_figures_are_its_result_file():
    """Run F (three context turns in training) in the model card: its three-turn proxy figures and command are
    ``docs/results/learned_quality_context_proxy_f.json``'s, made with weights trained with ``context_turns`` 3."""
    from pathlib import Path

    result = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results" /
                         "learned_quality_context_proxy_f.json").read_text(encoding="utf-8"))
    assert result["weights_config"]["context_turns"] == 3
    card = " ".join((evaluator.default_weights() / "README.md").read_text(encoding="utf-8").split())
    assert result["command"] in card
    acc = {row["turns"]: f"{row['ranking_accuracy_product']:.3f}" for row in result["rows"]}
    assert f"it reached {acc[3]} (last turn {acc[1]}, two turns {acc[2]})" in card


@pytest.mark.parametrize("args, message", [
    (["--tuned-layers", "9"], "--tuned-layers 9:"), (["--epochs", "0"], "--epochs 0:"),
    (["--batch-dialogues", "1"], "--batch-dialogues 1:"), (["--batch-dialogues", "100000"], "from 2 to 1,024"),
    (["--context-turns", "0"], "--context-turns 0:"), (["--rival-contexts", "-1"], "--rival-contexts -1:"),
    (["--rival-contexts", "65"], "from 0 to 64"), (["--rival-weight", "nan"], "--rival-weight nan:"),
    (["--rival-weight", "0"], "above 0 and at most 100 (rival_contexts=0, --rival-contexts 0, trains without rivals)"),
    (["--copy-weight", "-0.1"], "--copy-weight -0.1:"),
    (["--copy-weight", "nan"], "from 0 to 100 (0: off)"), (["--pair-hidden", "-1"], "--pair-hidden -1:"),
    (["--pair-hidden", "8", "--batch-dialogues", "65"], "--batch-dialogues 65 with a pair head"),
    (["--pair-hidden", "513"], "from 0 to 512"), (["--max-dialogues", "-3"], "--max-dialogues -3:"),
    (["--max-dialogues", "10000001"], "0 on the CLI: every dialogue"),
    (["--pair-without-context"], "--pair-without-context shapes a pair head: give --pair-hidden above 0")])
def test_train_evaluator_refuses_bad_options_in_one_line(args, message, tmp_path, capsys):
    from dialeval.cli import main

    (tmp_path / "data").mkdir()
    assert main(["train-evaluator", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


@pytest.mark.parametrize("where", ["work", "out"])
def test_folders_holding_someone_elses_files_are_refused_before_any_work(where, tmp_path, capsys):
    """A --work-dir (checkpoints go there) or an --out (replaced as a whole) holding a user's file is refused in
    one line before the corpus is read (the data folder here is empty: reading it would fail otherwise), and the
    file stays as it was."""
    from dialeval.cli import main

    (tmp_path / "data").mkdir()
    folder = tmp_path / ("w" if where == "work" else "o")
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    code = main(["train-evaluator", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "o"),
                 "--work-dir", str(tmp_path / "w")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert ("holds 'notes.txt', which this command did not write" if where == "work" else "did not create") in err
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


def test_specificity_by_hand():
    from dialeval.relevance import specificity as spec

    # tokens 0..3; counts 3, 1, 0, 0 over N = 4 tokens; add-one over V = 4: p = 4/8, 2/8, 1/8, 1/8
    model = spec.fit([[0, 0], [0, 1]], 4)
    np.testing.assert_allclose(np.exp(model[spec.LOG_PROB]), [0.5, 0.25, 0.125, 0.125], rtol=1e-15)
    # the two utterances' NLL: 2 log 2 and 3 log 2; numpy's linear quartiles of two values
    np.testing.assert_allclose(model[spec.QUARTILES], [2.25 * np.log(2), 2.75 * np.log(2)], rtol=1e-14)
    # scoring: NLL (−Σ log p) 0, 1, 2, 3 against quartiles 1 and 3 → clipped (NLL − 1) / 2
    state = {spec.LOG_PROB: np.log([np.e ** -1, np.e ** -2, 0.5]), spec.QUARTILES: np.array([1.0, 3.0])}
    got = spec.specificity(state, [[], [0], [1], [0, 1], [1, 1, 1]])
    np.testing.assert_allclose(got, [0.0, 0.0, 0.5, 1.0, 1.0], rtol=1e-14, atol=1e-15)


def test_weights_without_a_specificity_model_are_refused_in_one_line(tiny, tmp_path):
    from safetensors.numpy import load_file, save_file

    from dialeval.io.files import file_sha256

    out, _ = tiny
    old = tmp_path / "old"
    shutil.copytree(out, old)
    tensors = {k: v for k, v in load_file(str(old / evaluator.DELTA_FILE)).items() if ".specificity." not in k}
    save_file(tensors, str(old / evaluator.DELTA_FILE))
    meta = json.loads((old / evaluator.DELTA_META).read_text())
    meta["sha256"] = file_sha256(old / evaluator.DELTA_FILE)
    (old / evaluator.DELTA_META).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="has no specificity model") as err:
        evaluator.compute_learned_quality([["Hi"]], ["Hello"], weights=old)
    assert "\n" not in str(err.value)


def _metric_ranking_accuracy(out, shared_data, config, composition):
    """The trainer's proxy recomputed through the metric: per proxy context (its window of turns), the true next
    utterance against nine of other dialogues and its perturbed copy."""
    from dialeval.relevance.corpus import load_corpus

    corpus = load_corpus(shared_data / "dailydialog", max_dialogues=config.max_dialogues)
    texts, contexts, candidates, bad = trainer.proxy_texts(corpus, config.seed, config.context_turns)
    copies = dict(bad)
    rows = [[*row, copies.get(int(row[0]), int(row[0]))] for row in candidates]
    flat = [texts[i] for row in rows for i in row]
    ctxs = [[texts[i] for i in window] for window, row in zip(contexts, rows) for _ in row]
    scores = np.asarray(evaluator.compute_learned_quality(ctxs, flat, weights=out, composition=composition,
                                                          turns=config.context_turns)["scores"])
    return float((scores.reshape(len(rows), -1).argmax(1) == 0).mean())


def test_the_proxy_ranking_accuracy_is_what_the_metric_ranks(tiny, shared_data):
    out, meta = tiny
    for composition in ("product", "usl_h"):
        got = _metric_ranking_accuracy(out, shared_data, TINY, composition)
        # the default three-turn windows, pooled in fp32 torch (trainer) against float64 over ONNX embeddings
        # (metric): a near-tie or three of the 193 contexts may flip (0.005 each)
        assert got == pytest.approx(meta["proxy"][f"ranking_accuracy_{composition}"], abs=0.016)
        assert 0.1 < got < 1.0


def test_a_tiny_training_on_one_turn_contexts_learns_and_checks_what_the_metric_scores(shared_data, tmp_path):
    """--context-turns 1: the trainer reads each response's previous turn alone in training and in its proxy
    check, as the metric's turns=1 does; the check's ranking accuracy is the metric's on the same contexts."""
    config = T.TrainConfig(**{**T.config_dict(TINY), "context_turns": 1})
    meta = trainer.train_evaluator(shared_data / "dailydialog", tmp_path / "e1", config=config, progress=False,
                                   echo=lambda s: None)
    assert meta["config"]["context_turns"] == 1 and meta["proxy"]["next_utterance_accuracy"] >= 0.3
    got = _metric_ranking_accuracy(tmp_path / "e1", shared_data, config, "product")
    # fp32 ONNX against the trainer's torch: a near-tie may flip (PROB_TOL), a few contexts at most
    assert got == pytest.approx(meta["proxy"]["ranking_accuracy_product"], abs=0.01)


def test_frozen_features_are_the_whole_encoders_hidden_states_at_the_bottom_layers():
    """The frozen pass runs the bottom layers alone: bit for bit the hidden states the whole encoder passes from
    its bottom layers to the tuned ones on the same padded batch (shortest text first), each text cut to its own
    length; the encoder keeps all its layers."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from dialeval.models.encoders import default_encoder_path

    base = default_encoder_path()
    tokenizer, model = AutoTokenizer.from_pretrained(base), AutoModel.from_pretrained(base).eval()
    texts = ["Do you like jazz?", "I lost my keys somewhere between the car and the office this morning.", "Yes."]
    states = T.frozen_features(model, tokenizer, texts, tuned_layers=2, max_length=64).states
    assert len(model.encoder.layer) == 6
    order = sorted(range(len(texts)), key=lambda i: len(tokenizer(texts[i])["input_ids"]))
    with torch.inference_mode():
        batch = tokenizer([texts[i] for i in order], padding=True, return_tensors="pt")
        whole = model(**batch, output_hidden_states=True).hidden_states[4]
    for row, i in enumerate(order):
        assert torch.equal(states[i], whole[row, : int(batch["attention_mask"][row].sum())])
    with pytest.raises(ValueError, match="bottom 7: give 0 to 6"):
        with T.bottom_layers_only(model, 7):
            pass
    assert len(model.encoder.layer) == 6


def test_training_pools_the_context_as_scoring_does():
    """context_turns=3: a response's context is the unit-length mean of its last three turns weighted 1, 1/2, 1/4
    from the last back (by hand), and those turns are the ones masked out of its candidates; context_turns=1 is
    the previous turn alone."""
    import torch

    emb = torch.nn.functional.normalize(torch.tensor(np.random.default_rng(3).normal(size=(6, 4))), dim=-1).float()
    dialogue = [0, 1, 2, 3, 4]  # rows of emb; row 5 belongs to no dialogue here
    pooled, mask = T.context_pool(emb, [dialogue], 3)
    e = emb.double().numpy()
    # response 4 (t = 4): turns 3, 2, 1 with weights 1, 1/2, 1/4; response 1 (t = 1): turn 0 alone
    by_hand = e[3] + e[2] / 2 + e[1] / 4
    np.testing.assert_allclose(pooled[3].double().numpy(), by_hand / np.linalg.norm(by_hand), atol=1e-6)
    np.testing.assert_allclose(pooled[0].double().numpy(), e[0], atol=1e-6)
    assert mask[3].tolist() == [False, True, True, True, False, False]
    assert mask[0].tolist() == [True, False, False, False, False, False]
    single, single_mask = T.context_pool(emb, [dialogue], 1)
    assert torch.equal(single, emb[[0, 1, 2, 3]]) and single_mask.sum(1).tolist() == [1, 1, 1, 1]


def test_the_copy_loss_by_hand():
    """copy_loss = mean log(1 + exp(τ·(s(c, last turn) − s(c, next)))), written out for two responses."""
    import math

    import torch

    sim = torch.tensor([[0.9, 0.2, 0.5], [0.1, 0.8, 0.3]])
    got = T.copy_loss(sim, torch.tensor([2, 1]), torch.tensor([0, 0]), torch.tensor(10.0)).item()
    by_hand = (math.log1p(math.exp(10 * (0.9 - 0.5))) + math.log1p(math.exp(10 * (0.1 - 0.8)))) / 2
    assert got == pytest.approx(by_hand, rel=1e-6)


def test_the_copy_loss_is_added_only_when_weighted_and_reads_each_responses_last_turn(monkeypatch):
    """step_loss with copy_weight 0 adds nothing and reports no copy part; with a weight it adds that weight
    times copy_loss, whose last-turn columns are each response's previous utterance in the batch."""
    import torch

    from dialeval.relevance.model import build_heads

    torch.manual_seed(0)
    states = [torch.randn(3, 8) for _ in range(7)]
    layers, heads = torch.nn.ModuleList(), build_heads(8)
    seen = {}
    real_copy = T.copy_loss

    def spy(sim, responses, last_turns, scale):
        seen["responses"], seen["last"] = responses.tolist(), last_turns.tolist()
        return real_copy(sim, responses, last_turns, scale)

    monkeypatch.setattr(T, "copy_loss", spy)
    dialogues, perturbed = [[0, 1, 2], [3, 4]], [[5], [6]]
    plain, parts = T.step_loss(layers, heads, states, dialogues, perturbed, np.random.default_rng(1))
    assert "copy" not in parts and not seen
    weighted, parts = T.step_loss(layers, heads, states, dialogues, perturbed, np.random.default_rng(1),
                                  copy_weight=0.5)
    assert seen == {"responses": [1, 2, 4], "last": [0, 1, 3]}
    assert weighted.item() == pytest.approx(plain.item() + 0.5 * parts["copy"], rel=1e-6)


@pytest.fixture(scope="module")
def tiny_pair(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny_pair") / "evaluator"
    config = T.TrainConfig(**{**T.config_dict(TINY), "pair_hidden": 8})
    meta = trainer.train_evaluator(shared_data / "dailydialog", out, config=config, progress=False, echo=lambda s: None)
    return out, meta, config


def test_a_pair_head_trains_and_the_metric_scores_it_as_written_out(tiny_pair, shared_data):
    """--pair-hidden: the head is stored, learns, and the metric adds h(c', r) to the cosine exactly as the
    written-out reference does; the trainer's proxy check ranks what the metric ranks."""
    out, meta, config = tiny_pair
    assert meta["config"]["pair_hidden"] == 8 and meta["proxy"]["next_utterance_accuracy"] >= 0.3
    from safetensors.numpy import load_file

    tensors = load_file(str(out / evaluator.DELTA_FILE))
    assert tensors["head.pair.0.weight"].shape == (8, 4 * 384) and np.abs(tensors["head.pair.2.weight"]).max() > 0
    contexts = [["Do you like jazz?"], ["I lost my keys.", "Where did you see them last?"]]
    responses = ["I love it, especially Coltrane.", "In the car, I think."]
    got = evaluator.compute_learned_quality(contexts, responses, weights=out)["scores"]
    np.testing.assert_allclose(got, _torch_reference(out, contexts, responses, 3)["product"], atol=PROB_TOL)
    ranked = _metric_ranking_accuracy(out, shared_data, config, "product")
    assert ranked == pytest.approx(meta["proxy"]["ranking_accuracy_product"], abs=0.016)


def test_the_pair_head_by_hand_and_its_zero_start():
    """pair_matrix (the first layer split into its four blocks) equals the head on concatenated features for every
    (context, response) pair; a new head starts at h = 0, so similarities start as the cosine alone."""
    import torch

    from dialeval.relevance.model import build_heads, pair_matrix, pair_rows

    torch.manual_seed(1)
    heads = build_heads(6, pair_hidden=5)
    ctx = torch.nn.functional.normalize(torch.randn(3, 6), dim=-1)
    rsp = torch.nn.functional.normalize(torch.randn(4, 6), dim=-1)
    assert torch.equal(T.similarities(heads, ctx, rsp), ctx @ rsp.T)  # zero output layer
    torch.nn.init.normal_(heads.pair[2].weight)
    torch.nn.init.normal_(heads.pair[2].bias)
    full = pair_matrix(heads.pair, ctx, rsp)
    for i in range(3):
        for j in range(4):
            features = torch.cat([ctx[i], rsp[j], ctx[i] * rsp[j], (ctx[i] - rsp[j]).abs()])
            assert full[i, j].item() == pytest.approx(heads.pair(features).item(), abs=1e-5)
    np.testing.assert_allclose(pair_rows(heads.pair, ctx, rsp[:3]).detach().numpy(),
                               full.diagonal().detach().numpy(), atol=1e-5)
    assert "pair_hidden" not in T.config_dict(T.TrainConfig())  # records of runs without it read as before


@pytest.mark.parametrize("field, value, error, message", [
    ("pair_hidden", 513, ValueError, "pair_hidden (--pair-hidden) 513: give an integer from 0 to 512"),
    ("epochs", 1.5, TypeError, "epochs (--epochs) must be an integer"),
    ("lr_heads", float("nan"), ValueError, "lr_heads nan: give a number above 0 and at most 1"),
    ("perturbed_share", 1.5, ValueError, "perturbed_share 1.5: give a number from 0 to 1"),
    ("max_length", 4, ValueError, "max_length 4: give an integer from 8 to 512"),
    ("pair_context_block", 0, TypeError, "pair_context_block must be True or False"),
    ("seed", True, TypeError, "seed (--seed) must be an integer"),
    ("max_dialogues", 0, ValueError, "give an integer from 1 to 10,000,000 (None, or 0 on the CLI: every dialogue)"),
    ("rival_weight", float("inf"), ValueError, "rival_weight (--rival-weight) inf: give a number above 0")])
def test_a_training_configuration_is_validated_where_it_is_made(field, value, error, message):
    """TrainConfig refuses a bad value itself, so a Python caller of train_evaluator gets the CLI's one line."""
    with pytest.raises(error) as caught:
        T.TrainConfig(**{field: value})
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_pair_head_without_its_context_block():
    """pair_context_block=False: the first layer reads [r, c'⊙r, |c' − r|] (3 × dim); pair_matrix and pair_rows
    equal the head on those concatenated features, and the metric's numpy similarity equals the torch cosine plus
    h; a record states the choice only when it is off."""
    import torch

    from dialeval.relevance.model import (
        build_heads,
        next_utterance_similarity,
        pair_matrix,
        pair_rows,
    )

    torch.manual_seed(2)
    heads = build_heads(6, pair_hidden=5, pair_context_block=False)
    assert heads.pair[0].weight.shape == (5, 18)
    torch.nn.init.normal_(heads.pair[2].weight)
    ctx = torch.nn.functional.normalize(torch.randn(3, 6), dim=-1)
    rsp = torch.nn.functional.normalize(torch.randn(4, 6), dim=-1)
    full = pair_matrix(heads.pair, ctx, rsp).detach()
    for i in range(3):
        for j in range(4):
            features = torch.cat([rsp[j], ctx[i] * rsp[j], (ctx[i] - rsp[j]).abs()])
            assert full[i, j].item() == pytest.approx(heads.pair(features).item(), abs=1e-5)
    np.testing.assert_allclose(pair_rows(heads.pair, ctx, rsp[:3]).detach().numpy(), full.diagonal().numpy(), atol=1e-5)
    state = {f"pair.{k}": v.detach().double().numpy() for k, v in heads.pair.state_dict().items()}
    state.update({"context_map.weight": np.eye(6), "context_map.bias": np.zeros(6)})
    got = next_utterance_similarity(state, ctx.double().numpy(), rsp[:3].double().numpy())
    np.testing.assert_allclose(got, (ctx * rsp[:3]).sum(-1).numpy() + full.diagonal().numpy(), atol=1e-5)
    state["pair.0.weight"] = state["pair.0.weight"][:, :12]  # two blocks: neither head
    with pytest.raises(ValueError, match="reads 12 features; with 6-wide embeddings it must read 18 or 24"):
        next_utterance_similarity(state, ctx.double().numpy(), rsp[:3].double().numpy())
    off = T.config_dict(T.TrainConfig(pair_hidden=8, pair_context_block=False))
    assert off["pair_context_block"] is False and "pair_context_block" not in T.config_dict(T.TrainConfig(pair_hidden=8))


def test_a_training_configuration_takes_numpy_numbers_as_python_numbers():
    """A numpy integer or float is accepted and stored as a Python number, so the run's JSON record writes it."""
    import json

    config = T.TrainConfig(seed=np.int64(3), epochs=np.int32(2), rival_weight=np.float32(0.5))
    assert (type(config.seed), type(config.epochs), type(config.rival_weight)) == (int, int, float)
    assert json.loads(json.dumps(T.config_dict(config)))["rival_weight"] == 0.5


def test_the_fields_named_with_a_cli_option_are_the_clis_options():
    """training.CLI_OPTIONS (which fields an error names with their option) is exactly the set of TrainConfig
    fields that `dialeval train-evaluator` has an option of the same name for."""
    import argparse
    import dataclasses

    from dialeval.relevance import cli_train

    parser = argparse.ArgumentParser()
    cli_train.register(parser.add_subparsers())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["train-evaluator"]
    dests = {a.dest for a in sub._actions}
    fields = {f.name for f in dataclasses.fields(T.TrainConfig)}
    assert set(T.CLI_OPTIONS) == dests & fields
