"""The demo as an MCP server (issue 32.3): `dialeval demo` started in its own process on 127.0.0.1 (stopped by its
pid), its tools listed and called with the `mcp` package's streamable-HTTP client, the numbers compared with
`/evaluate` through gradio_client, and the per-client limits checked on MCP calls."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import dialeval
from dialeval import registry, ui

REPO = Path(__file__).resolve().parents[1]
HOLD = "hold the slot"  # a request whose first response is this sleeps 4 s in the server (below)
#: a request whose first response is this runs 60 s in the server, stopping early once cancelled; it touches a file
#: in $HOLD_STARTED when it starts
HOLD_LONG = "hold until cancelled"
SERVER = f"""
import os, sys, time, uuid
from dialeval.models.runtime import check_cancelled
from dialeval.ui import blocks
real = blocks.run_metric
def run_metric(name, inputs, *args, **kwargs):
    if inputs.responses[:1] == [{HOLD!r}]:
        time.sleep(4)
    if inputs.responses[:1] == [{HOLD_LONG!r}]:
        open(os.path.join(os.environ["HOLD_STARTED"], uuid.uuid4().hex), "w").close()
        for _ in range(600):
            time.sleep(0.1)
            check_cancelled()
    return real(name, inputs, *args, **kwargs)
blocks.run_metric = run_metric
from dialeval.cli import main
sys.exit(main(["demo", "--port", sys.argv[1], "--no-prepare"]))  # the MCP tools, not the models' loading
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_with_src(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


@contextlib.contextmanager
def served(args: list[str], port: int, cwd: Path, env: dict[str, str]):
    """``args`` run in their own process until ``http://127.0.0.1:<port>/`` answers; stopped by its pid after."""
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"{args} exited: {proc.stderr.read()[-2000:]}"
            try:
                urllib.request.urlopen(url + "gradio_api/info", timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"{args} did not answer within 120 s"
                time.sleep(0.5)
        yield url
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def demo_url():
    port = free_port()
    env = env_with_src(DIALEVAL_MAX_JOBS_PER_CLIENT="1", DIALEVAL_MAX_RESPONSES="5")
    # cwd tests/: the checkout root's spaces/ templates must not shadow the real `spaces` package
    with served([sys.executable, "-c", SERVER, str(port)], port, REPO / "tests", env) as url:
        yield url


async def _mcp(url: str, calls: list[tuple[str, dict]], gap_s: float = 0.0) -> tuple[list, list]:
    """List the tools, then make ``calls`` (concurrently, ``gap_s`` apart) on one MCP session."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url + "gradio_api/mcp/") as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools

            async def call(i: int, name: str, arguments: dict):
                await asyncio.sleep(i * gap_s)
                return await session.call_tool(name, arguments)

            results = await asyncio.gather(*(call(i, n, a) for i, (n, a) in enumerate(calls)))
    return tools, list(results)


def mcp(url: str, calls: list[tuple[str, dict]] = (), gap_s: float = 0.0) -> tuple[list, list]:
    return asyncio.run(asyncio.wait_for(_mcp(url, list(calls), gap_s), timeout=120))


def text(result) -> str:
    return "".join(c.text for c in result.content)


RESPONSES = "i like tea .\ni like coffee ."


def test_one_typed_documented_tool_per_metric_that_runs(demo_url):
    tools, _ = mcp(demo_url)
    by_name = {t.name: t for t in tools}
    enabled = [name for name in dialeval.METRICS if ui.availability(name)[0]]
    assert {"distinct_n", "ent_n", "dialspk", "sem_ent", "full_followup"} <= set(enabled)
    assert sorted(by_name) == sorted(f"score_{name}" for name in enabled)  # the page's own endpoints are not tools
    dist = by_name["score_distinct_n"]
    assert dist.inputSchema["properties"] == {"responses": {"type": "string", "description":
                                                            "Responses, one response per line."}}
    assert dist.description.startswith("Dist-n: distinct n-grams")
    spk = by_name["score_dialspk"].inputSchema["properties"]
    assert list(spk) == ["speakers_predicted", "speakers_gold"] and spk["speakers_gold"]["type"] == "string"
    sem = by_name["score_sem_ent"].inputSchema["properties"]
    assert list(sem) == ["responses", "references", "model"]
    assert all(m in sem["model"]["description"] for m in registry.get("sem_ent").models)


def test_a_tool_call_returns_the_numbers_of_evaluate(demo_url):
    from gradio_client import Client

    _, [result] = mcp(demo_url, [("score_distinct_n", {"responses": RESPONSES})])
    assert not result.isError, text(result)
    tool = json.loads(text(result))
    # 8 tokens, 5 distinct unigrams; 6 bigrams, 5 distinct
    assert tool["distinct_n"]["distinct_1"] == 0.625 and tool["distinct_n"]["distinct_2"] == 5 / 6
    client = Client(demo_url, verbose=False)
    *_, download = client.predict(responses=RESPONSES, use_distinct_n=True, draw_plots=False, api_name="/evaluate")
    evaluated = json.loads(Path(download).read_text(encoding="utf-8"))
    assert tool["distinct_n"] == evaluated["distinct_n"] and tool["dialeval"] == evaluated["dialeval"]
    assert set(tool) == {"dialeval", "distinct_n"}  # only the metric of the tool ran


DIALOGUE = ["Hi! How was your weekend?", "Great, I went hiking in the hills.", "Which trail did you take?"]


def test_the_quality_tools_return_the_numbers_of_evaluate(demo_url):
    """The served tools of the two reference-free quality metrics score a dialogue as ``evaluate`` does in this
    process: the same ONNX graph and weights; the server may split the encoder's sums over other threads, so a
    score may differ by float32 rounding of a unit-norm dot product (a few 1e-7), not more than 1e-6."""
    for name in ("context_relevance", "learned_quality"):  # one at a time: the server allows one job per client
        _, [result] = mcp(demo_url, [(f"score_{name}", {"dialogue": "\n".join(DIALOGUE)})])
        assert not result.isError, text(result)
        served = json.loads(text(result))[name]
        direct = dialeval.load(name, "dialog").compute(dialogues=[DIALOGUE])
        assert served[name] == pytest.approx(direct[name], abs=1e-6), name
        assert served["signature"] == direct["signature"]


def test_per_request_limits_apply_to_mcp_calls(demo_url):
    six = "\n".join(f"r{i}" for i in range(6))  # DIALEVAL_MAX_RESPONSES=5 on this server
    _, [result] = mcp(demo_url, [("score_ent_n", {"responses": six})])
    assert result.isError and "Responses: 6 lines; the limit is 5 per request" in text(result)


def test_per_client_job_limit_applies_to_mcp_calls(demo_url):
    # DIALEVAL_MAX_JOBS_PER_CLIENT=1: a second call while the first runs is refused at once, then calls work again
    held = f"{HOLD}\nanother one"
    _, (first, second) = mcp(demo_url, [("score_distinct_n", {"responses": held}),
                                        ("score_distinct_n", {"responses": RESPONSES})], gap_s=1.5)
    assert not first.isError, text(first)
    assert second.isError and "already has 1 requests waiting or running" in text(second)
    _, [again] = mcp(demo_url, [("score_distinct_n", {"responses": RESPONSES})])
    assert not again.isError and json.loads(text(again))["distinct_n"]["distinct_1"] == 0.625


def test_readme_mcp_agent_example_runs(demo_url):
    import io
    import re

    page = (REPO / "docs" / "integrations.md").read_text(encoding="utf-8")
    block = re.search(r"## From an MCP agent\n.*?```python\n(.*?)```", page, re.S)
    assert block, "docs/integrations.md has no code block under '## From an MCP agent'"
    code = block.group(1).replace("http://127.0.0.1:7860/", demo_url)
    assert code != block.group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/integrations.md", "exec"), {"__name__": "docs"})  # noqa: S102 - the page's own example
    assert out.getvalue().splitlines() == ["['score_distinct_n', 'score_ent_n', 'score_low_frequency']", "0.625"]


def test_metric_space_serves_its_one_tool_with_the_numbers_of_compute(tmp_path):
    """A metric Space's app.py, as `hub build` writes it, run in its own process: MCP on, one typed tool."""
    from gradio_client import Client

    from dialeval.hub import repos as hub

    folder = hub.write_metric_space(registry.get("dialspk"), tmp_path / "dialspk", "acme", hub.Install(None)).folder
    port = free_port()
    with served([sys.executable, "app.py"], port, folder, env_with_src(GRADIO_SERVER_PORT=str(port))) as url:
        speakers = {"speakers_predicted": "Alice, Bob", "speakers_gold": "Alice, Carol"}
        tools, [result] = mcp(url, [("score_dialspk", speakers)])
        assert [t.name for t in tools] == ["score_dialspk"]
        assert list(tools[0].inputSchema["properties"]) == ["speakers_predicted", "speakers_gold"]
        tool = json.loads(text(result))["dialspk"]
        assert (tool["dac"], tool["sac"]) == (0.5, 0.0)  # one of two turns right; the story not all right
        *_, raw = Client(url, verbose=False).predict(**speakers, api_name="/compute")
        assert raw == tool


async def _abandon_when_started(url: str, started: Path, calls: int) -> None:
    """``calls`` long calls, each from its own MCP session; every client leaves once all of them are running."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def call() -> None:
        async with streamable_http_client(url + "gradio_api/mcp/") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("score_distinct_n", {"responses": f"{HOLD_LONG}\nx"})

    tasks = [asyncio.ensure_future(call()) for _ in range(calls)]
    deadline = time.monotonic() + 60
    while len(list(started.iterdir())) < calls:
        assert time.monotonic() < deadline and not any(t.done() for t in tasks), "the long calls did not start"
        await asyncio.sleep(0.2)
    for task in tasks:  # the clients go away mid-call
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def test_an_abandoned_call_frees_its_slot(tmp_path):
    """Two MCP clients hold both computing slots with 60 s calls and disconnect: their calls are cancelled, so a
    third client's call runs within a few seconds instead of waiting for them."""
    port = free_port()
    started = tmp_path / "started"
    started.mkdir()
    env = env_with_src(HOLD_STARTED=str(started))
    with served([sys.executable, "-c", SERVER, str(port)], port, REPO / "tests", env) as url:
        mcp(url, [("score_distinct_n", {"responses": RESPONSES})])  # warm: the first call imports the metric
        asyncio.run(asyncio.wait_for(_abandon_when_started(url, started, calls=2), timeout=90))
        begun = time.monotonic()
        _, [result] = mcp(url, [("score_distinct_n", {"responses": RESPONSES})])
        waited = time.monotonic() - begun
    assert not result.isError, text(result)
    assert waited < 10, f"the third call waited {waited:.0f} s for the abandoned ones"
