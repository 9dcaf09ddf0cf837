"""Same-context rivals (DailyDialog++ positives against adversarial negatives) for the learned evaluator: which
records are read, the loss by hand, the step's contexts, and the proxy's pair accuracy by hand."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from dialeval.relevance import rivals as R
from dialeval.relevance import training as T
from dialeval.relevance.corpus import DialogueCorpus
from dialeval.relevance.model import build_heads

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(i: int, context: list[str]) -> dict:
    return {"id": i, "context": context, "positive_responses": [f"p{i}"], "adversarial_negative_responses": [f"a{i}"],
            "random_negative_responses": [f"r{i}"]}


def _data_dir(tmp_path: Path) -> Path:
    held = [{"dialogue": [{"text": "Hello there ."}, {"text": "Hi, how are you?"}, {"text": "Fine ."}]}]
    (tmp_path / "dailydialog").mkdir()
    (tmp_path / "dailydialog" / "validation.json").write_text(json.dumps(held))
    (tmp_path / "dailydialog" / "test.json").write_text(json.dumps([{"dialogue": [{"text": "Bye now"}]}]))
    records = [
        _record(0, ["A", "B"]),
        _record(1, ["x", "hello THERE", "Hi how are you"]),  # two consecutive validation turns: left out
        _record(2, ["C", "D", "E"]),
        _record(3, ["bye now!"]),  # a one-turn context that is a test turn: left out
        _record(4, ["F", "Fine."]),  # one held-out turn, but not two consecutive ones: kept
        _record(5, ["G"]),
        _record(6, ["H", "I"]),
    ]
    (tmp_path / "dailydialog_plusplus").mkdir()
    (tmp_path / "dailydialog_plusplus" / "dev.json").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return tmp_path


def test_rivals_leave_out_held_out_dialogue_and_split_by_position(tmp_path):
    data = _data_dir(tmp_path)
    train, proxy = R.load_rivals(data, "train"), R.load_rivals(data, "proxy")
    # kept, in file order: 0, 2, 4, 5, 6; even positions train, odd positions are the proxy
    assert [r.positives[0] for r in train] == ["p0", "p4", "p6"]
    assert [r.positives[0] for r in proxy] == ["p2", "p5"]
    assert R.load_rivals(data / "dailydialog", "proxy") == proxy  # the dailydialog folder itself works too
    assert train[1] == R.Rivals(["F", "Fine."], ["p4"], ["a4"], ["r4"])


def test_rivals_that_reword_or_answer_with_held_out_dialogue_are_left_out_too(tmp_path):
    data = _data_dir(tmp_path)
    held = [{"dialogue": [{"text": "Are you ready to go shopping at the market today ?"},
                          {"text": "I need to make a list of the things that we need first ."},
                          {"text": "Fine ."}]},
            {"dialogue": [{"text": "Let us get down to business and talk about the contract now ."},
                          {"text": "abcdefghij klmnopqrs"},  # 19 letters
                          {"text": "abcdefghij klmnopqrst"}]}]  # 20 letters
    (data / "dailydialog" / "validation.json").write_text(json.dumps(held))

    def record(i: int, context: list[str], **responses: list[str]) -> dict:
        return {**_record(i, context), **{f"{kind}_responses": texts for kind, texts in responses.items()}}

    records = [
        record(0, ["Q"], positive=["I need to make a list of the things that we need first!"]),  # a held-out turn
        record(1, ["So, are you ready to go shopping at the market?",  # reworded: six-word runs of one dialogue
                   "Sure. I must make a list of the things that we need."]),
        record(2, ["OK, let us get down to business and begin.",  # six-word runs, but of two dialogues
                   "I need to make a list of the things first."]),
        record(3, ["x", "Are you ready to go shopping at the mall?"]),  # one turn with a six-word run
        record(4, ["y"]),
        record(5, ["J"], adversarial_negative=["Fine."]),  # a held-out turn under 20 letters: a stock phrase
        record(6, ["K"], random_negative=["ABCDEFGHIJ klmnopqrs!"]),  # 19 letters: kept
        record(7, ["L"], random_negative=["abcdefghij, KLMNOPQRST"]),  # 20 letters: left out
        record(8, ["ready to go shopping at", "things that we need first"]),  # two five-word runs: kept
        record(9, ["you ready to go shopping at", "list of the things that we"]),  # two six-word runs: left out
        record(10, ["we get down to business and talk", "then get down to business and talk"]),  # one run, two turns
        record(11, ["M", "N", "Let us get down to business and talk about the contract now!"]),  # long turn, last
    ]
    (data / "dailydialog_plusplus" / "dev.json").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    kept = R.load_rivals(data, "train") + R.load_rivals(data, "proxy")
    assert sorted(int(r.positives[0][1:]) for r in kept) == [2, 3, 4, 5, 6, 8]


def test_a_missing_rivals_file_or_bad_half_is_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="dailydialog_plusplus/dev.json.*--rival-contexts 0"):
        R.load_rivals(tmp_path, "train")
    with pytest.raises(ValueError, match="half='test'"):
        R.load_rivals(_data_dir(tmp_path), "test")


def test_malformed_or_empty_rivals_are_one_line(tmp_path):
    """Uneven or missing kinds of response, an empty half and a missing DailyDialog split: one line each."""
    data = _data_dir(tmp_path)
    dev = data / "dailydialog_plusplus" / "dev.json"
    lines = dev.read_text().splitlines()
    uneven = json.loads(lines[2])
    uneven["adversarial_negative_responses"] = ["a", "b"]
    dev.write_text("\n".join([*lines[:2], json.dumps(uneven), *lines[3:]]) + "\n")
    with pytest.raises(ValueError, match=r"dev.json, line 3: 1 positive, 2 adversarial and 1 random .* first record has 1"):
        R.load_rivals(data, "train")
    dev.write_text(lines[0] + "\n")  # one context: the proxy half is empty
    assert len(R.load_rivals(data, "train")) == 1
    with pytest.raises(ValueError, match="no context is left in its proxy half"):
        R.load_rivals(data, "proxy")
    (data / "dailydialog" / "test.json").unlink()
    with pytest.raises(FileNotFoundError, match="test.json must sit in"):
        R.load_rivals(data, "train")


def test_training_data_indexes_each_rivals_window_positives_and_adversarial_negatives():
    corpus = DialogueCorpus(train=[["u0", "u1"]], validation=[], left_out=0)
    config = T.TrainConfig(perturbed_share=0.0, context_turns=2, rival_contexts=1)
    data = T.training_data(corpus, config, [R.Rivals(["c0", "c1", "c2"], ["p0", "p1"], ["a0"], ["r0"])])
    assert data.texts == ["u0", "u1", "c1", "c2", "p0", "p1", "a0"]  # random negatives are not trained on
    assert data.rivals == [([2, 3], [4, 5], [6])]
    assert T.training_data(corpus, config).texts == ["u0", "u1"] and T.training_data(corpus, config).rivals == []


def test_each_step_takes_the_next_rival_contexts_of_one_seeded_permutation():
    config = T.TrainConfig(seed=5, rival_contexts=3)
    steps = [T.rival_batch(7, config, step) for step in range(7)]
    taken = [i for step in steps for i in step]
    assert sorted(taken) == sorted(list(range(7)) * 3)  # 21 draws over 7 contexts: each exactly three times
    assert taken[:7] != list(range(7)) and sorted(taken[:7]) == list(range(7))  # one shuffled pass, then the next
    assert taken[7:14] == taken[:7] and steps == [T.rival_batch(7, config, step) for step in range(7)]
    assert T.rival_batch(7, T.TrainConfig(seed=6, rival_contexts=3), 0) != steps[0]  # the seed draws the order


def test_rival_loss_by_hand():
    """No tuned layers (the embedding is the unit-length mean of the states), identity context map: InfoNCE of
    each positive against its context's adversarial negatives at temperature 20, plus the calibration BCE."""
    import torch

    rng = np.random.default_rng(0)
    states = [torch.tensor(rng.normal(size=(int(rng.integers(1, 4)), 4)), dtype=torch.float32) for _ in range(9)]
    heads = build_heads(4)
    triples = [([0], [1, 2], [3, 4]), ([5], [6], [7, 8])]
    loss, parts = T.rival_loss([], heads, states, triples)
    emb = [s.double().numpy().mean(0) for s in states]
    emb = [e / np.linalg.norm(e) for e in emb]
    rows, pos, neg = [], [], []
    for (c,), good, bad in triples:
        for g in good:
            logits = 20.0 * np.array([emb[g] @ emb[c], *[emb[b] @ emb[c] for b in bad]])
            rows.append(np.log(np.exp(logits).sum()) - logits[0])
        pos += [emb[g] @ emb[c] for g in good]
        neg += [emb[b] @ emb[c] for b in bad]

    def bce(x, y):
        z = 10.0 * np.asarray(x) - 5.0
        return np.log1p(np.exp(-z)) if y else np.log1p(np.exp(z))

    calib = np.mean(np.concatenate([bce(pos, 1), bce(neg, 0)]))
    assert parts["rival_nce"] == pytest.approx(np.mean(rows), rel=1e-5)
    assert parts["rival_calibration"] == pytest.approx(calib, rel=1e-5)
    assert float(loss.detach()) == pytest.approx(np.mean(rows) + calib, rel=1e-5)


def test_the_proxy_pair_accuracy_by_hand():
    script = _script("learned_quality_rival_proxy")
    good = np.array([[0.9, 0.5], [0.2, 0.4]])
    bad = np.array([[0.5, 0.1], [0.4, 0.3]])
    # row 0: 0.9 > 0.5, 0.9 > 0.1, 0.5 = 0.5 (a half), 0.5 > 0.1; row 1: 0.2 < 0.4, 0.2 < 0.3, 0.4 = 0.4, 0.4 > 0.3
    assert script.pair_accuracy(good, bad) == pytest.approx((3.5 + 1.5) / 8)


def test_the_model_cards_rival_table_is_the_result_files():
    """Runs E to P in the model card's rival table: each row's figures are its rival-proxy and three-turn
    context-proxy result files', the unsuffixed files (and P's) were made with the shipped weights, and every row but G's
    (weights not kept) reads the proxy half that the shipped leave-out makes."""
    from dialeval.relevance import evaluator

    results = ROOT / "docs" / "results"
    folder = evaluator.default_weights()
    digest = evaluator.read_delta(folder)[2]
    card_text = (folder / "README.md").read_text(encoding="utf-8")
    card = " ".join(card_text.split())
    halves = {}
    for label, suffix in (("| E |", "_e"), ("| G (rival weight 1, earlier half) |", "_g"),
                          ("| H (rival weight 0.1, not held out) |", "_h"), ("| I (H's options, stricter leave-out) |", "_i"),
                          ("| K (I's options, copy weight 0.1) |", "_k"), ("| L (I's options, 3 tuned layers) |", "_l"),
                          ("| M (I's options, pair head) |", "_m"), ("| N (M's, without the c′ block) |", "_n"),
                          ("| I+ (I, calibration refit) |", "_i_refit"), ("| M+ (M, calibration refit) |", "_m_refit"),
                          ("| N+ (N, calibration refit) |", "_n_refit"), ("| **P (I's options", ""),
                          ("| **P (I's options", "_p")):
        rival = json.loads((results / f"learned_quality_rival_proxy{suffix}.json").read_text(encoding="utf-8"))
        context = json.loads((results / f"learned_quality_context_proxy{suffix}.json").read_text(encoding="utf-8"))
        assert rival["weights"] == context["weights"]  # both proxies of one row read the same weights
        halves[suffix] = rival["contexts"]
        if suffix in ("", "_p"):
            assert rival["weights"] == f"learned_quality@{digest[:12]}"
            assert suffix or rival["command"] in card
        line = next(x for x in card_text.splitlines() if x.startswith(label) and x.count("|") == 6)
        cells = [c.strip(" *") for c in line.strip("|").split("|")]
        three = next(r for r in context["rows"] if r["turns"] == 3)["ranking_accuracy_product"]
        assert cells[1:] == [f"{rival['score_vs_adversarial']:.3f}", f"{rival['next_utterance_vs_adversarial']:.3f}",
                             f"{rival['score_vs_random']:.3f}", f"{three:.3f}"], line
    trained = evaluator.read_delta(folder)[1]["rival_train_contexts"]  # the even positions: as many or one more
    assert len({halves[k] for k in halves if k != "_g"}) == 1 and halves[""] in (
        trained, trained - 1)
    assert f"{halves['']} contexts; the Data section" in card and f"earlier {halves['_g']}-context half" in card
    g = json.loads((results / "learned_quality_rival_proxy_g.json").read_text(encoding="utf-8"))["weights_config"]
    assert g["rival_contexts"] == 4 and g.get("rival_weight", 1.0) == 1.0  # G predates the weight option: 1


@pytest.mark.parametrize("name", ["learned_quality_rival_proxy", "learned_quality_context_proxy"])
def test_the_proxy_scripts_refuse_bad_options_in_one_line(tmp_path, capsys, name):
    script = _script(name)
    from dialeval.relevance.evaluator import default_weights

    foreign = tmp_path / "notes.json"
    foreign.write_text('{"command": "something else"}')
    shipped = default_weights() / "evaluator.json"
    runs = [(["--weights", str(tmp_path)], "--weights needs --out"),
            (["--out", str(tmp_path / "o.json")], str(tmp_path / "nowhere")),
            (["--weights", str(tmp_path), "--out", str(tmp_path / "o.json")], str(tmp_path)),
            (["--weights", "", "--out", str(tmp_path / "o.json")], "holds no evaluator.safetensors"),
            (["--weights", str(tmp_path / "gone"), "--out", str(tmp_path / "o.json")], "no such folder"),
            (["--out", str(foreign)], "this script did not write it"),
            (["--weights", str(tmp_path), "--out", str(script.OUT)], "the shipped weights' figures only"),
            (["--out", str(shipped)], str(default_weights()))]
    for extra, named in runs:
        with pytest.raises(SystemExit) as stop:
            script.main(["--data-dir", str(tmp_path / "nowhere"), *extra])
        err = capsys.readouterr().err.strip()
        assert stop.value.code == 2 and named in err.splitlines()[-1] and "Traceback" not in err, err
    assert not (tmp_path / "o.json").exists() and foreign.read_text() == '{"command": "something else"}'
    assert json.loads(shipped.read_text())["sha256"]  # the shipped record is untouched


def test_the_parrot_figures_in_the_cards_are_the_proxy_result_files():
    """The model card's parroting table and the metric card's caveat quote the context proxy's ``parrot`` figures
    for the shipped weights (the unsuffixed file) and for runs K (``_k``, trained with a copy loss), L (``_l``) and
    M (``_m``, a pair head)."""
    from dialeval.relevance import evaluator

    results = ROOT / "docs" / "results"
    card = " ".join((evaluator.default_weights() / "README.md").read_text(encoding="utf-8").split())
    metric_card = " ".join((ROOT / "metrics" / "learned_quality" / "README.md").read_text(encoding="utf-8").split())
    for label, suffix in (("| **P (these weights)** |", ""), ("| **P (these weights)** |", "_p"), ("| I |", "_i"),
                          ("| K (`--copy-weight 0.1`) |", "_k"),
                          ("| L (`--tuned-layers 3`) |", "_l"), ("| M (`--pair-hidden 64`) |", "_m"),
                          ("| N (`--pair-hidden 64 --pair-without-context`) |", "_n"),
                          ("| I+ (I, calibration refit) |", "_i_refit"), ("| M+ (M, calibration refit) |", "_m_refit"),
                          ("| N+ (N, calibration refit) |", "_n_refit")):
        context = json.loads((results / f"learned_quality_context_proxy{suffix}.json").read_text(encoding="utf-8"))
        parrot = context["parrot"]
        assert parrot["turns"] == 3 and context["pairs"] == 1000
        both = f"{parrot['true_above_copy_product']:.3f} | {parrot['true_above_copy_next_utterance']:.3f} |"
        assert f"{label} {both}" in card
    shipped = json.loads((results / "learned_quality_context_proxy.json").read_text(encoding="utf-8"))["parrot"]
    assert f"{100 * (1 - shipped['true_above_copy_product']):.1f} %" in metric_card
    shipped_config = evaluator.read_delta(evaluator.default_weights())[1]["config"]
    assert json.loads((results / "learned_quality_context_proxy_p.json").read_text(encoding="utf-8"))[
        "weights_config"] == shipped_config
    i_config = json.loads((results / "learned_quality_context_proxy_i.json").read_text(encoding="utf-8"))[
        "weights_config"]  # the runs below changed I's options
    assert {k: i_config[k] for k in ("tuned_layers", "context_turns", "rival_weight")} == {
        "tuned_layers": 2, "context_turns": 1, "rival_weight": 0.1}
    for suffix, option in (("_k", {"copy_weight": 0.1}), ("_l", {"tuned_layers": 3}), ("_m", {"pair_hidden": 64}),
                           ("_n", {"pair_hidden": 64, "pair_context_block": False}), ("_i_refit", {}),
                           ("_m_refit", {"pair_hidden": 64}), ("_n_refit", {"pair_hidden": 64, "pair_context_block": False})):
        config = json.loads((results / f"learned_quality_context_proxy{suffix}.json").read_text(encoding="utf-8"))
        recorded = {k: v for k, v in config["weights_config"].items() if (k, v) != ("copy_weight", 0.0)}  # off
        assert recorded == {**i_config, **option}, suffix
    model_card = " ".join((evaluator.default_weights() / "README.md").read_text(encoding="utf-8").split())
    assert f"{100 * (1 - shipped['true_above_copy_product']):.1f} %" in model_card.split("## Limits")[1]


def test_the_parrot_check_pairs_each_true_reply_with_a_copy_of_its_last_turn(monkeypatch):
    """parrot() scores (history, true reply) then (history, copy of its last turn) per pair, and counts the
    pairs where the true reply scores strictly higher (a tie is the copy's), by hand on three pairs."""
    script = _script("learned_quality_context_proxy")
    seen = {}

    def fake(contexts, predictions, **options):
        seen.update(contexts=contexts, predictions=predictions, turns=options["turns"])
        return {"scores": [0.9, 0.2, 0.3, 0.3, 0.1, 0.5], "next_utterance": [0.8, 0.1, 0.2, 0.4, 0.6, 0.6]}

    monkeypatch.setattr(script, "compute_learned_quality", fake)
    histories = [["a", "b"], ["c"], ["d", "e", "f"]]
    ranked = [["B1", "x"], ["C1", "y"], ["F1", "z"]]
    got = script.parrot(histories, ranked)
    assert seen["predictions"] == ["B1", "b", "C1", "c", "F1", "f"] and seen["turns"] == 3
    assert seen["contexts"] == [["a", "b"], ["a", "b"], ["c"], ["c"], ["d", "e", "f"], ["d", "e", "f"]]
    assert got == {"turns": 3, "true_above_copy_product": round(1 / 3, 4),
                   "true_above_copy_next_utterance": round(1 / 3, 4)}


def test_the_calibration_refit_is_the_maximum_likelihood_fit():
    """logistic_fit solves the logistic score equations: at the fit, mean(σ(a·s + a0) − y) = 0 and
    mean((σ(a·s + a0) − y)·s) = 0 (written out here), from a start far from it, and lowers the BCE."""
    from scipy.special import expit

    script = _script("learned_quality_refit_calibration")
    rng = np.random.default_rng(3)
    s = np.r_[rng.normal(0.4, 0.2, 400), rng.normal(0.1, 0.2, 400)]
    y = np.r_[np.ones(400), np.zeros(400)]
    (a, a0), before, after, gradient = script.logistic_fit(s, y, np.array([10.0, -5.0]))
    residual = expit(a * s + a0) - y
    assert abs(residual.mean()) < 1e-9 and abs((residual * s).mean()) < 1e-9 and gradient < 1e-9
    assert after < before


def test_the_calibration_refit_draws_each_negative_from_another_dialogue():
    """pair_texts: each context window is the three turns before its next utterance, and each negative is an
    utterance of a different dialogue (every dialogue's utterances are tagged with its index)."""
    script = _script("learned_quality_refit_calibration")
    dialogues = [[f"d{d}u{u}" for u in range(2 + d % 4)] for d in range(30)]
    windows, positives, negatives = script.pair_texts(dialogues, 50, seed=1)
    assert len(windows) == len(positives) == len(negatives) == 50
    for window, positive, negative in zip(windows, positives, negatives):
        d, u = (int(x) for x in positive[1:].split("u"))
        assert window == dialogues[d][max(0, u - 3):u] and u >= 1
        assert not negative.startswith(f"d{d}u")


def test_the_calibration_refit_refuses_an_existing_folder_in_one_line(tmp_path, capsys):
    """--out must be a new folder: one that exists (a user's) is refused before any work, and left as it was."""
    script = _script("learned_quality_refit_calibration")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("x")
    for extra, named in ((["--out", str(mine)], f"--out {mine} exists"), (["--out", str(tmp_path / "a" / "b")], "parent"),
                         (["--out", str(tmp_path / "new"), "--pairs", "5"], "--pairs 5")):
        with pytest.raises(SystemExit) as stop:
            script.main(["--data-dir", str(tmp_path), *extra])
        err = capsys.readouterr().err.strip()
        assert stop.value.code == 2 and named in err.splitlines()[-1] and "Traceback" not in err, err
    assert (mine / "keep.txt").read_text() == "x" and not (tmp_path / "new").exists()
    assert script.main(["--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "new")]) == 2
    assert "DailyDialog files missing" in capsys.readouterr().err and not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # its temporary folder is gone too
    with pytest.raises(SystemExit) as stop:
        script.main(["--data-dir", str(tmp_path), "--out", str(tmp_path / "new"), "--seed", str(2**32)])
    assert stop.value.code == 2 and "--seed 4294967296" in capsys.readouterr().err


def test_the_refit_weights_calibrations_in_the_model_card_are_the_result_files():
    """Run O's fitted calibrations and losses in the model card are those its result files record."""
    from dialeval.relevance import evaluator

    card = " ".join((evaluator.default_weights() / "README.md").read_text(encoding="utf-8").split())
    for run in "imn":
        result = json.loads((ROOT / "docs" / "results" / f"learned_quality_context_proxy_{run}_refit.json"
                             ).read_text(encoding="utf-8"))
        refit = result["calibration_refit"]
        a, a0 = refit["calibration_after"]
        assert refit["pairs"] == 10000 and refit["seed"] == 0 and refit["turns"] == 3 and refit["gradient_at_fit"] < 1e-6
        assert f"{run.upper()}+ [{a:.2f}, {a0:.2f}]".replace("-", "−") in card
        assert f"{refit['bce_before']:.3f} to {refit['bce_after']:.3f}" in card


def test_the_model_cards_mean_next_utterance_figures_are_the_rival_result_files():
    """Run N's diagnosis quotes S's mean over positive, adversarial and random replies from the rival proxy's
    result files of I (``_i``), M and N, and each refit's starting calibration from its result file."""
    from dialeval.relevance import evaluator

    card = " ".join((evaluator.default_weights() / "README.md").read_text(encoding="utf-8").split())
    for suffix in ("_i", "_m", "_n"):
        means = json.loads((ROOT / "docs" / "results" / f"learned_quality_rival_proxy{suffix}.json"
                            ).read_text(encoding="utf-8"))["next_utterance_mean"]
        assert f"{means['positive']:.2f}, {means['adversarial']:.2f} and {means['random']:.2f}" in card, suffix
        assert means["positive"] > means["adversarial"] > means["random"]
    for run, name in (("i", "I's"), ("m", "M's"), ("n", "N's")):
        refit = json.loads((ROOT / "docs" / "results" / f"learned_quality_context_proxy_{run}_refit.json"
                            ).read_text(encoding="utf-8"))["calibration_refit"]
        b, b0 = refit["calibration_before"]
        assert f"{name} [{b:.2f}, {b0:.2f}]".replace("-", "−") in card


def test_the_model_cards_reproduction_row_is_its_retrain_file():
    """The card's "reproducible" row against ``learned_quality_retrain.avx2.json`` and the retrained weights' proxy
    files: the same digest, counts and differences, and both proxies equal to the shipped weights' own."""
    from dialeval.relevance import evaluator

    results = ROOT / "docs" / "results"
    retrain = json.loads((results / "learned_quality_retrain.avx2.json").read_text(encoding="utf-8"))
    row = next(x for x in (evaluator.default_weights() / "README.md").read_text(encoding="utf-8").splitlines()
               if x.startswith("| reproducible |"))
    assert retrain["sha256_shipped"] == evaluator.read_delta(evaluator.default_weights())[2]
    assert f"`{retrain['sha256_retrained'][:12]}…`" in row
    assert f"{retrain['identical_tensors']} of {retrain['tensors']} tensors" in row
    assert f"at most {retrain['max_abs_score_diff']:.1e}" in row and f"Spearman {retrain['spearman']:.6f}" in row
    others = [t for t in retrain["worst_tensors"] if "key.bias" not in t["tensor"]]
    keys = [t for t in retrain["worst_tensors"] if "key.bias" in t["tensor"]]
    assert f"within {others[0]['relative']:.1e} of its largest value" in row
    assert f"up to {100 * max(t['relative'] for t in keys):.1f} %" in row
    assert f"torch {retrain['torch'].split('+')[0]}, {round(retrain['train_seconds']):,} s" in row
    for name in ("rival", "context"):
        shipped = json.loads((results / f"learned_quality_{name}_proxy.json").read_text(encoding="utf-8"))
        again = json.loads((results / f"learned_quality_{name}_proxy_retrain.json").read_text(encoding="utf-8"))
        assert again["weights"] == f"learned_quality@{retrain['sha256_retrained'][:12]}"
        drop = {"weights", "seconds", "command"}
        assert {k: v for k, v in again.items() if k not in drop} == {k: v for k, v in shipped.items() if k not in drop}


def test_tensor_differences_by_hand():
    compare = _script("learned_quality_compare_weights")
    a = {"w": np.array([1.0, -4.0], dtype=np.float32), "b": np.array([0.5, 0.25], dtype=np.float32)}
    b = {"w": np.array([1.0, -3.0], dtype=np.float32), "b": np.array([0.5, 0.25], dtype=np.float32)}
    rows = compare.tensor_differences(a, b)
    assert [r["tensor"] for r in rows] == ["w", "b"]
    assert rows[0]["max_abs_diff"] == 1.0 and rows[0]["max_abs_value"] == 4.0 and rows[0]["relative"] == 0.25
    assert rows[1]["identical"] and rows[1]["relative"] == 0.0 and not rows[0]["identical"]
    with pytest.raises(ValueError, match="other tensors"):
        compare.tensor_differences(a, {"w": b["w"]})


def test_the_compare_script_never_writes_over_a_file_it_did_not_write(tmp_path, capsys):
    import shutil

    from dialeval.relevance.evaluator import default_weights

    compare = _script("learned_quality_compare_weights")
    weights = tmp_path / "w"
    shutil.copytree(default_weights(), weights)
    (tmp_path / "data" / "dailydialog").mkdir(parents=True)
    (tmp_path / "data" / "dailydialog" / "test.json").write_text("[]")
    (tmp_path / "empty").mkdir()
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"command": "something else"}')
    for args, said in ((["--out", str(foreign)], "this script did not write it"),
                       (["--out", str(weights / "o.json")], "--out"),
                       (["--weights", str(tmp_path / "empty")], "pass a folder `dialeval train-evaluator` wrote"),
                       (["--data-dir", str(tmp_path / "empty")], "no dailydialog/test.json")):
        argv = ["--data-dir", str(tmp_path / "data"), "--weights", str(weights), *args]
        with pytest.raises(SystemExit) as caught:
            compare.main(argv)
        assert caught.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert said in err, err
    assert foreign.read_text() == '{"command": "something else"}'


def test_dailydialog_test_pairs_by_hand(tmp_path):
    from dialeval.relevance.corpus import dailydialog_test_pairs

    (tmp_path / "dailydialog").mkdir()
    (tmp_path / "dailydialog" / "test.json").write_text(json.dumps(
        [{"dialogue": [{"text": "a"}, {"text": "b"}, {"text": "c"}]}, {"dialogue": [{"text": "d"}, {"text": "e"}]}]))
    assert dailydialog_test_pairs(tmp_path, 10) == ([["a"], ["a", "b"], ["d"]], ["b", "c", "e"])
    assert dailydialog_test_pairs(tmp_path, 2) == ([["a"], ["a", "b"]], ["b", "c"])
    (tmp_path / "dailydialog" / "test.json").write_text('{"not": "a list"}')
    with pytest.raises(ValueError, match="JSON array"):
        dailydialog_test_pairs(tmp_path, 1)
