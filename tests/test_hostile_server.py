"""A hostile client against the demo server (issue 12, "Server"): model spellings, cancellation, disclosure,
per-client limits, result files, a port in use. Servers are started on 127.0.0.1 by the tests."""

from __future__ import annotations

import asyncio
import glob
import os
import socket
import tempfile
import threading
import time

import pytest

from dialeval import registry
from dialeval.cli import main
from dialeval.models.runtime import MODELS
from dialeval.ui import serving
from dialeval.ui.inputs import InputError
from dialeval.ui.serving import RequestGate, ServerPolicy, SessionFiles, is_public

SETS = "yes\nno\nmaybe\n\nsure\nsure thing"


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory):
    from dialeval.testing.roberta import tiny_nli_model

    return str(tiny_nli_model(tmp_path_factory.mktemp("tiny_nli")))


def _serve(policy: ServerPolicy | None = None, concurrency: int = 1):
    from gradio_client import Client

    from dialeval.demo import build_demo, launch_options

    demo = build_demo(None, concurrency=concurrency, policy=policy)
    demo.launch(**launch_options(None, "127.0.0.1"), prevent_thread_lock=True, quiet=True)
    return demo, Client(demo.local_url, verbose=False)


@pytest.fixture(scope="module")
def local_app():
    demo, client = _serve()
    yield demo, client
    client.close()
    demo.close()


@pytest.fixture(scope="module")
def public_app():
    demo, client = _serve(ServerPolicy(public=True, max_jobs_per_client=2))
    yield demo, client
    client.close()
    demo.close()
    serving._ACTIVE.clear()  # the next demo (or none) sets its own policy


def evaluate_args(texts: dict[str, str], use: dict[str, str | None], plots: bool = False) -> list:
    """/evaluate's values in the order of its named parameters (dialeval.ui.blocks.api_parameters)."""
    from dialeval.ui.blocks import INPUT_ORDER, api_parameters

    values: dict = {k: texts.get(k, "") for k in INPUT_ORDER}
    for name in registry.declarations():
        values.update({f"use_{name}": name in use, f"model_{name}": use.get(name) or ""})
    return [*(values.get(p) for p in api_parameters() if p != "draw_plots"), plots]


def statuses(result) -> str:
    return result[0]


def spellings(path: str) -> list[str]:
    parent, name = os.path.split(path)
    return [path, path + "/", path + "/./", "/" + path, f"{parent}/../{os.path.basename(parent)}/{name}"]


# ----------------------------------------------------------------------------------------------
# One model, however it is spelled


def test_five_spellings_of_one_model_hold_one_cache_entry(local_app, tiny_nli):
    _, client = local_app
    MODELS.clear()
    loads = MODELS.loads
    for spelling in spellings(tiny_nli):
        result = client.predict(*evaluate_args({"sets": SETS}, {"nli_diversity": spelling}), api_name="/evaluate")
        assert "1 of 1 metrics computed" in statuses(result), statuses(result)
    nli_entries = [k for k in MODELS.keys() if k[0] == "nli"]
    assert nli_entries == [("nli", os.path.realpath(tiny_nli), "cpu", "torch.float32")]
    assert MODELS.loads == loads + 1


# ----------------------------------------------------------------------------------------------
# Public server: only the offered models, one refusal for every path


def test_public_server_refuses_paths_the_same_way(public_app, tiny_nli, tmp_path):
    _, client = public_app
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    probes = ["/etc/shadow", "/root/.ssh", "/no/such/path", str(garbage), tiny_nli, "../../etc/passwd"]
    answers = []
    for path in probes:
        result = client.predict(*evaluate_args({"sets": SETS}, {"nli_diversity": path}), api_name="/evaluate")
        answers.append(statuses(result).replace(repr(path), "<MODEL>"))
    assert len(set(answers)) == 1, answers
    assert "is not offered on this server" in answers[0]
    offered = registry.get("nli_diversity").models
    assert all(m in answers[0] for m in offered)


def test_policy_rules():
    public = ServerPolicy(public=True)
    assert public.check_model("nli_diversity", None) is None
    offered = registry.get("nli_diversity").models[0]
    assert public.check_model("nli_diversity", f"  {offered} ") == offered
    with pytest.raises(InputError, match="the model field must be text"):
        public.check_model("nli_diversity", 5)
    with pytest.raises(InputError, match="the model field must be text"):
        ServerPolicy(public=False).check_model("nli_diversity", {"path": "/etc"})
    assert ServerPolicy(public=True, allow_local_models=True).check_model("nli_diversity", "/x") == "/x"
    assert ServerPolicy(public=False).check_model("nli_diversity", "/x") == "/x"


def test_public_is_a_space_or_a_non_loopback_host(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert not is_public("127.0.0.1") and not is_public("localhost") and not is_public("::1")
    assert is_public("0.0.0.0") and is_public("192.168.1.5")
    monkeypatch.setenv("SPACE_ID", "someone/dialeval")
    assert is_public("127.0.0.1")
    assert ServerPolicy.from_env("127.0.0.1").max_jobs_per_client == 2
    assert ServerPolicy.from_env("127.0.0.1", allow_local_models=True).restricts_models is False


# ----------------------------------------------------------------------------------------------
# Cancellation frees the server at the next batch boundary


def test_cancelled_heavy_request_frees_the_slot(tiny_nli, monkeypatch):
    """Concurrency 1. A heavy NLI request (2 s per batch, dozens of batches) is cancelled while it runs; the
    next small request must answer within a few seconds, and the heavy one must stop computing."""
    from dialeval.nli.core import NLIClassifier

    started, steps = threading.Event(), []
    real_step = NLIClassifier._step

    def slow_step(self, batch):
        steps.append(time.monotonic())
        started.set()
        time.sleep(2.0)
        return real_step(self, batch)

    monkeypatch.setattr(NLIClassifier, "_step", slow_step)
    demo, client = _serve(concurrency=1)
    try:
        words = [f"reply number {i} about tea" for i in range(20)]
        heavy_sets = "\n\n".join("\n".join(words[j:] + words[:j]) for j in range(10))  # 10 sets × 380 pairs
        heavy = client.submit(*evaluate_args({"sets": heavy_sets}, {"nli_diversity": tiny_nli}),
                              api_name="/evaluate")
        assert started.wait(60), "the heavy request never started"
        heavy.cancel()
        start = time.monotonic()
        small = client.predict(*evaluate_args({"responses": "hello there\nhi"}, {"distinct_n": None}),
                               api_name="/evaluate")
        waited = time.monotonic() - start
        assert "1 of 1 metrics computed" in statuses(small)
        assert waited < 8, f"the small request waited {waited:.1f} s behind a cancelled one"
        count = len(steps)
        time.sleep(4.5)
        assert len(steps) == count, "the cancelled computation kept running"
        assert count < 5
    finally:
        client.close()
        demo.close()


# ----------------------------------------------------------------------------------------------
# Per-client limit, result files, port in use


def test_per_client_limit_on_waiting_and_running_requests():
    gate = RequestGate(concurrency=1, max_jobs_per_client=2)

    class Req:
        def __init__(self, host: str, session: str) -> None:
            self.client = type("C", (), {"host": host})()
            self.session_hash = session
            self.headers = {}

    release = threading.Event()

    async def scenario():
        a = [asyncio.create_task(gate.run(release.wait, 10, request=Req("1.1.1.1", f"s{i}"))) for i in range(2)]
        await asyncio.sleep(0.3)
        with pytest.raises(InputError, match="already has 2 requests waiting or running"):
            await gate.run(lambda: None, request=Req("1.1.1.1", "s9"))
        other = asyncio.create_task(gate.run(lambda: "other", request=Req("2.2.2.2", "t")))
        release.set()
        results = await asyncio.gather(*a, other)
        assert results == [True, True, "other"]
        assert gate.jobs("1.1.1.1") == 0

    asyncio.run(scenario())


def test_result_files_live_in_a_per_session_folder_that_is_cleaned(local_app):
    demo, client = local_app
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "dialeval-results-*.json")))
    for _ in range(3):
        result = client.predict(*evaluate_args({"responses": "a b\nc d"}, {"distinct_n": None}), api_name="/evaluate")
        assert result[-1] is not None
    after = set(glob.glob(os.path.join(tempfile.gettempdir(), "dialeval-results-*.json")))
    assert after == before  # nothing left loose in the temp folder
    files = demo.dialeval_server.files
    written = list(files.root.rglob("*.json"))
    assert written and all(p.parent.parent == files.root for p in written)  # <root>/<session>/<file>
    assert len({p.parent for p in written}) == 1  # one client session, one folder


def test_session_files_prune_and_cleanup(tmp_path):
    files = SessionFiles(max_sessions=2, per_session=1, root=tmp_path / "root")
    files.grace_s = 0.0
    paths = [files.write_json("s1", {"i": i}) for i in range(3)]
    assert [os.path.exists(p) for p in paths] == [False, False, True]
    files.write_json("s2", {})
    files.write_json("s3", {})  # three sessions for two places: s1's folder goes
    assert not os.path.exists(paths[-1])
    files.cleanup()
    assert not (tmp_path / "root").exists()


def test_port_in_use_is_one_line(capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert main(["demo", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"port {port} on 127.0.0.1 is not available" in err


def test_disconnected_client_stops_its_computation(tiny_nli, monkeypatch):
    """A client that closes its event stream while its heavy request runs: the computation stops at a batch
    boundary (Gradio notices the closed stream within ~10 s; the computation would run minutes)."""
    import uuid

    import httpx

    from dialeval.nli.core import NLIClassifier

    started, steps = threading.Event(), []
    real_step = NLIClassifier._step

    def slow_step(self, batch):
        steps.append(time.monotonic())
        started.set()
        time.sleep(1.0)
        return real_step(self, batch)

    monkeypatch.setattr(NLIClassifier, "_step", slow_step)
    demo, client = _serve(concurrency=1)
    try:
        fn_index = next(i for i, d in enumerate(demo.config["dependencies"]) if d.get("api_name") == "evaluate")
        words = [f"reply number {i} about tea" for i in range(20)]
        heavy_sets = "\n\n".join("\n".join(words[j:] + words[:j]) for j in range(10))
        session = uuid.uuid4().hex
        base = demo.local_url.rstrip("/") + "/gradio_api"
        joined = httpx.post(f"{base}/queue/join", json={
            "data": evaluate_args({"sets": heavy_sets}, {"nli_diversity": tiny_nli}), "fn_index": fn_index,
            "session_hash": session, "event_data": None, "trigger_id": None}, timeout=30)
        assert joined.status_code == 200, joined.text
        with httpx.stream("GET", f"{base}/queue/data", params={"session_hash": session}, timeout=None) as stream:
            for line in stream.iter_lines():
                if "process_starts" in line:
                    break
        assert started.wait(60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            count = len(steps)
            time.sleep(3)
            if len(steps) == count:
                break
        else:
            pytest.fail("the computation of a disconnected client kept running")
        assert len(steps) < 100  # 10 sets × 12 batches would be 120 steps
    finally:
        client.close()
        demo.close()


# ----------------------------------------------------------------------------------------------
# Issue 21: admission before Gradio's queue, private events that disclose nothing, a bounded Gradio cache


def test_third_request_of_one_client_is_refused_at_once_while_another_client_is_served(tiny_nli, monkeypatch):
    """Public server, 2 slots, 2 requests per client. Client A sends three heavy requests at once: the third is
    refused immediately (not queued), and client B's small request answers in its normal time."""
    from gradio_client import Client

    from dialeval.nli.core import NLIClassifier

    started, real_step = threading.Event(), NLIClassifier._step

    def slow_step(self, batch):
        started.set()
        time.sleep(1.0)
        return real_step(self, batch)

    monkeypatch.setattr(NLIClassifier, "_step", slow_step)
    demo, plain = _serve(ServerPolicy(public=True, allow_local_models=True, max_jobs_per_client=2), concurrency=2)
    monkeypatch.setenv("SPACE_ID", "test/dialeval-demo")  # client identity from X-Forwarded-For (read per request)
    a = Client(demo.local_url, verbose=False, headers={"X-Forwarded-For": "10.0.0.1"})
    b = Client(demo.local_url, verbose=False, headers={"X-Forwarded-For": "10.0.0.2"})
    small = evaluate_args({"responses": "hello there\nhi"}, {"distinct_n": None})
    try:
        start = time.monotonic()
        b.predict(*small, api_name="/evaluate")
        normal = time.monotonic() - start
        words = [f"reply number {i} about tea" for i in range(20)]
        heavy = evaluate_args({"sets": "\n\n".join("\n".join(words[j:] + words[:j]) for j in range(10))},
                              {"nli_diversity": tiny_nli})
        jobs = [a.submit(*heavy, api_name="/evaluate") for _ in range(2)]
        assert started.wait(60), "the heavy request never started"
        time.sleep(0.5)
        start = time.monotonic()
        third = a.predict(*heavy, api_name="/evaluate")
        refused_after = time.monotonic() - start
        assert "already has 2 requests waiting or running" in statuses(third)
        assert refused_after < 3.0, f"the third request waited {refused_after:.1f} s before its refusal"
        start = time.monotonic()
        other = b.predict(*small, api_name="/evaluate")
        waited = time.monotonic() - start
        assert "1 of 1 metrics computed" in statuses(other)
        assert waited < normal + 3.0, f"another client's request took {waited:.1f} s (normally {normal:.1f} s)"
        assert not any(job.done() for job in jobs)  # A's requests were still computing meanwhile
        for job in jobs:
            job.cancel()
    finally:
        for client in (a, b, plain):
            client.close()
        demo.close()
        serving._ACTIVE.clear()


def test_prepare_opens_gated_events_and_bounds_the_gradio_cache(public_app, local_app):
    demo, _ = public_app
    gated = [fn for fn in demo.fns.values() if serving.is_gated(fn.fn)]
    tools = [fn.api_name for fn in gated if fn.api_name.startswith("score_")]  # the MCP tools, through the same gate
    assert [fn.api_name for fn in gated] == ["evaluate", *tools] and "score_distinct_n" in tools
    assert {fn.concurrency_limit for fn in gated} == {serving.dispatch_limit(demo.dialeval_server.gate.concurrency)}
    assert gated[0].concurrency_limit >= 8
    assert demo.delete_cache == serving.GRADIO_CACHE_SWEEP
    local, _ = local_app  # no per-client limit on this machine's own demo: Gradio's usual limit
    assert {fn.concurrency_limit for fn in local.fns.values() if serving.is_gated(fn.fn)} == {"default"}


def test_private_recheck_discloses_nothing_on_a_public_server(tmp_path):
    from dialeval.ui.scoring import availability

    serving.Server.create(1, ServerPolicy(public=True))
    try:
        folder, file = tmp_path / "dir", tmp_path / "file"
        folder.mkdir()
        file.write_text("x", encoding="utf-8")
        answers = {p: availability("nli_diversity", p)[1].replace(repr(p), "P")
                   for p in (str(folder), str(file), str(tmp_path / "nothing"), "/etc/passwd", "/root/.ssh")}
        assert len(set(answers.values())) == 1, answers
        assert "is not offered on this server" in next(iter(answers.values()))
    finally:
        serving._ACTIVE.clear()


def test_sigterm_removes_the_results_folder(tmp_path):
    import signal
    import subprocess
    import sys

    code = ("import time\n"
            "from dialeval.ui.serving import SessionFiles\n"
            f"files = SessionFiles(root={str(tmp_path / 'results')!r})\n"
            "files.write_json('s1', {'a': 1})\n"
            "print('ready', flush=True)\n"
            "time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert list((tmp_path / "results").rglob("*.json"))
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (tmp_path / "results").exists()


def test_gradio_cache_is_swept(monkeypatch):
    """With ``delete_cache`` (here one second), the results files Gradio copied into its cache are deleted."""
    from gradio_client import Client

    from dialeval.demo import build_demo, launch_options

    demo = build_demo(None, concurrency=1)
    demo.delete_cache = (1, 1)
    demo.launch(**launch_options(None, "127.0.0.1"), prevent_thread_lock=True, quiet=True)
    client = Client(demo.local_url, verbose=False)
    try:
        for _ in range(3):
            client.predict(*evaluate_args({"responses": "a b\nc d"}, {"distinct_n": None}), api_name="/evaluate")

        def cached():
            return [f for s in demo.temp_file_sets for f in s if os.path.basename(f).startswith("dialeval-results-")]

        assert cached()
        deadline = time.monotonic() + 15
        while cached() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert cached() == []
    finally:
        client.close()
        demo.close()
