"""Issue 21, "no event callable by fn_index that is not in the public API": every event of the demo and of every
per-metric widget that runs Python is a documented public endpoint; the rest run in the browser only. Servers are
started on 127.0.0.1 by the tests."""

from __future__ import annotations

import json
import uuid

import pytest

from dialeval import registry, ui
from dialeval.resources import examples_dir
from dialeval.ui import serving
from dialeval.ui.serving import ServerPolicy


def _apps():
    from dialeval.demo import build_demo
    from dialeval.ui import metric_widget

    yield "demo", build_demo("default")
    for name in registry.declarations():
        yield name, metric_widget(name)


def test_every_event_with_a_python_function_is_a_public_documented_endpoint():
    try:
        for app_name, app in _apps():
            named = set(app.get_api_info()["named_endpoints"])
            backend = [fn for fn in app.fns.values() if fn.fn is not None]
            assert backend, app_name
            for fn in backend:
                assert fn.api_visibility == "public", (app_name, fn.api_name)
                assert f"/{fn.api_name}" in named, (app_name, fn.api_name, named)
                assert not fn.api_name.startswith(("false", "js_fn", "unnamed")), (app_name, fn.api_name)
            # the browser-only steps (button state, scroll) have no Python function at all
            assert all(fn.js for fn in app.fns.values() if fn.fn is None), app_name
            # a page-load step may only run in the browser (the demo's first example, issue 34.2)
            assert not [fn for fn in app.fns.values() if fn.fn is not None and any(t[1] == "load" for t in fn.targets)], \
                app_name
    finally:
        serving._ACTIVE.clear()


def test_endpoint_names_per_app():
    from dialeval.demo import build_demo
    from dialeval.ui import metric_widget

    try:
        demo = build_demo(None)
        model_metrics = [n for n, d in registry.declarations().items() if d.needs_model]
        tools = [f"/score_{n}" for n in registry.declarations() if ui.availability(n)[0]]  # the MCP tools (32.3)
        assert "/score_distinct_n" in tools
        assert set(demo.get_api_info()["named_endpoints"]) == {
            "/evaluate", "/load_upload", "/load_example", *(f"/check_model_{n}" for n in model_metrics), *tools}
        assert set(metric_widget("distinct_n").get_api_info()["named_endpoints"]) == {"/compute", "/score_distinct_n"}
        assert set(metric_widget("sem_ent").get_api_info()["named_endpoints"]) == {"/compute", "/check_model",
                                                                                  "/score_sem_ent"}
    finally:
        serving._ACTIVE.clear()


def test_demo_opens_on_the_first_example_in_the_browser_only():
    """The page shows the first example (a js-only page-load step, no Python), while the components' values, the
    API defaults of /evaluate, stay empty and unticked (issue 34.2)."""
    from dialeval.demo import build_demo, example_texts

    first = json.loads(sorted(examples_dir().glob("*.json"))[0].read_text(encoding="utf-8"))
    try:
        demo = build_demo("default")
    finally:
        serving._ACTIVE.clear()
    values = {b.elem_id: b.value for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    assert values["responses"] == values["sets"] == values["dialogue"] == values["status"] == ""
    assert not any(values[f"use-{name}"] for name in registry.declarations())
    assert values["example"] == first["title"]
    [load] = [fn for fn in demo.fns.values() if any(t[1] == "load" for t in fn.targets)]
    assert load.fn is None and load.js
    shown = json.loads(load.js.removeprefix("() => "))
    texts = example_texts(first)
    assert shown[:len(texts)] == texts and shown[0] == "\n".join(first["responses"])
    assert shown[-1].startswith(f"**Example loaded:** {first['title']}.")


@pytest.fixture(scope="module")
def public_demo():
    from dialeval.demo import build_demo, launch_options

    demo = build_demo(None, concurrency=1, policy=ServerPolicy(public=True, max_jobs_per_client=2))
    demo.launch(**launch_options(None, "127.0.0.1"), prevent_thread_lock=True, quiet=True)
    yield demo
    demo.close()
    serving._ACTIVE.clear()


def _join_and_read(base: str, fn_index: int, data: list, timeout: float = 30.0) -> tuple[int, list[dict]]:
    """A raw client: POST /queue/join with ``fn_index``, then read the event stream until it completes."""
    import httpx

    session = uuid.uuid4().hex
    joined = httpx.post(f"{base}/queue/join", json={"data": data, "fn_index": fn_index, "session_hash": session,
                                                    "event_data": None, "trigger_id": None}, timeout=timeout)
    if joined.status_code != 200:
        return joined.status_code, []
    messages = []
    with httpx.stream("GET", f"{base}/queue/data", params={"session_hash": session}, timeout=timeout) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                messages.append(json.loads(line[5:]))
                if messages[-1].get("msg") in ("process_completed", "close_stream", "unexpected_error"):
                    break
    return joined.status_code, messages


def test_raw_clients_reach_only_public_endpoints(public_demo, tmp_path):
    demo = public_demo
    public = {i for i, d in enumerate(demo.config["dependencies"]) if d.get("api_visibility") == "public"}
    with_python = {i for i, fn in demo.fns.items() if fn.fn is not None}
    assert with_python == public  # nothing runs Python that the API docs do not show
    base = demo.local_url.rstrip("/") + "/gradio_api"
    for fn_index in sorted(set(demo.fns) - public):  # the browser-only steps: nothing to execute on the server
        status, messages = _join_and_read(base, fn_index, [None])
        completed = [m for m in messages if m.get("msg") == "process_completed"]
        assert status != 200 or (completed and completed[-1]["success"] is False), (fn_index, messages)


def test_public_model_check_answers_the_same_for_every_path(public_demo, tmp_path):
    """The model re-check is a public endpoint: on a public server it says the same for every path that is not
    an offered model, whatever is on disk (a folder, a file, nothing, /etc/passwd, /root/.ssh)."""
    from gradio_client import Client

    folder, file = tmp_path / "dir", tmp_path / "file"
    folder.mkdir()
    file.write_text("x", encoding="utf-8")
    client = Client(public_demo.local_url, verbose=False)
    try:
        answers = set()
        for path in (str(folder), str(file), str(tmp_path / "nothing"), "/etc/passwd", "/root/.ssh"):
            check, note = client.predict(model=path, api_name="/check_model_nli_diversity")
            answers.add((json.dumps(check, sort_keys=True), note["value"].replace(repr(path), "P")))
        assert len(answers) == 1, answers
        check, note = next(iter(answers))
        assert json.loads(check)["interactive"] is False and "is not offered on this server" in note
    finally:
        client.close()


# ----------------------------------------------------------------------------------------------
# Per-metric Spaces: the same serving policy as the demo


def test_every_widget_is_served_under_the_server_policy():
    from dialeval.ui import file_cache, metric_widget

    try:
        for name in registry.declarations():
            widget = metric_widget(name, policy=ServerPolicy(public=True, max_jobs_per_client=2), concurrency=2)
            server = widget.dialeval_server
            assert server.policy.public and server.gate.max_jobs_per_client == 2
            gated = [fn for fn in widget.fns.values() if serving.is_gated(fn.fn)]
            tool = [f"score_{name}"] if ui.availability(name)[0] else []  # its MCP tool, through the same gate
            assert [fn.api_name for fn in gated] == ["compute", *tool], name
            assert {fn.concurrency_limit for fn in gated} == {8}  # handed to the gate: max(8, 4 × 2 slots)
            assert widget.delete_cache == (60, 600)  # Gradio's age sweep: every minute, files over 10 minutes
            assert widget in file_cache._APPS and widget.dialeval_cache_bound == file_cache.CacheBound()
            assert server.files.root.is_dir()  # the results folder, removed on exit and SIGTERM
    finally:
        serving._ACTIVE.clear()


def test_metric_space_app_takes_the_public_policy_on_a_space(tmp_path, monkeypatch):
    import runpy

    from dialeval.hub import repos as hub

    decl = registry.get("nli_diversity")
    folder = hub.write_metric_space(decl, tmp_path / decl.name, "acme", hub.Install(None)).folder
    monkeypatch.setenv("SPACE_ID", "acme/nli_diversity")
    try:
        demo = runpy.run_path(str(folder / "app.py"), run_name="space_app")["demo"]
        server = demo.dialeval_server
        assert server.policy.public and server.policy.restricts_models and server.gate.max_jobs_per_client == 2
        tool = ["score_nli_diversity"] if ui.availability("nli_diversity")[0] else []
        assert [fn.api_name for fn in demo.fns.values() if serving.is_gated(fn.fn)] == ["compute", *tool]
    finally:
        serving._ACTIVE.clear()


def test_widget_refuses_a_third_request_of_one_client_at_once(monkeypatch):
    """A per-metric widget on 127.0.0.1 with 2 slots and 2 requests per client: while one of a client's requests
    computes and the other waits (one slot stays free for other clients), its third is refused at once."""
    import threading
    import time

    from gradio_client import Client

    from dialeval.ui import widgets
    from dialeval.ui.scoring import run_metric

    release, started = threading.Event(), threading.Semaphore(0)

    def held(*args, **kwargs):
        started.release()
        release.wait(30)
        return run_metric(*args, **kwargs)

    monkeypatch.setattr(widgets, "run_metric", held)
    widget = widgets.metric_widget("distinct_n", policy=ServerPolicy(public=True, max_jobs_per_client=2),
                                   concurrency=2)
    widget.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True)
    client = Client(widget.local_url, verbose=False)
    try:
        jobs = [client.submit(responses="a b\nc d", api_name="/compute") for _ in range(2)]
        assert started.acquire(timeout=30), "the first request never started"
        time.sleep(1.0)  # the second is admitted and waits for a slot
        start = time.monotonic()
        status, *_ = client.predict(responses="a b\nc d", api_name="/compute")
        assert time.monotonic() - start < 3.0
        assert "already has 2 requests waiting or running" in status, status
        release.set()
        assert [job.result(timeout=60)[0] for job in jobs] == ["Done.", "Done."]
    finally:
        release.set()
        client.close()
        widget.close()
        serving._ACTIVE.clear()
