"""Served requests of a fourth hostile pass: a JSON body nested thousands of levels deep (the MCP server answered
HTTP 500) is one line with HTTP 400, a JSON-RPC error on the MCP route; a tool called over the HTTP API with a list or
a number where text is due is one line naming the parameter (was "'list' object has no attribute 'split'")."""

from __future__ import annotations

import json

import httpx
import pytest

from dialeval.ui import serving
from dialeval.ui.request_depth import MAX_DEPTH, json_depth

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _nest(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


def test_json_depth_counts_brackets_outside_strings_only():
    assert json_depth(b'{"a": [1, {"b": "[[[[{{{"}]}') == 3
    assert json_depth(b'"[[[["') == 0 and json_depth(b"") == 0
    assert json_depth(json.dumps({"x": _nest(500)}).encode()) == 501
    assert json_depth(b'{"a": "\\"[[[["}') == 1  # an escaped quote does not end the string


@pytest.fixture(scope="module")
def demo_url():
    from dialeval.demo import build_demo, launch_options

    demo = build_demo(None, concurrency=1)
    demo.launch(**launch_options(None, "127.0.0.1"), prevent_thread_lock=True, quiet=True)
    yield demo.local_url
    demo.close()
    serving._ACTIVE.clear()


def _deep_body(levels: int) -> str:
    inner = "[" * levels + '"x"' + "]" * levels
    return ('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "score_distinct_n", '
            f'"arguments": {{"responses": {inner}}}}}}}')


@pytest.mark.parametrize("levels", [500, 5000])
def test_a_deeply_nested_mcp_call_is_a_client_error_in_one_line(demo_url, levels):
    reply = httpx.post(demo_url + "gradio_api/mcp/", content=_deep_body(levels), headers=MCP_HEADERS, timeout=60)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == -32600
    assert error["message"] == f"the request's JSON is nested {levels + 3} levels deep; at most {MAX_DEPTH} are accepted."


def test_shallow_mcp_requests_still_pass(demo_url):
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    reply = httpx.post(demo_url + "gradio_api/mcp/", json=hello, headers=MCP_HEADERS, timeout=60)
    assert reply.status_code == 200 and '"serverInfo"' in reply.text


@pytest.mark.parametrize("value,kind", [(["a b", "c d"], "list"), (5, "int")])
def test_a_tool_called_over_the_http_api_with_no_text_names_the_parameter(demo_url, value, kind):
    start = httpx.post(demo_url + "gradio_api/call/score_distinct_n", json={"data": [value]}, timeout=60)
    assert start.status_code == 200
    events = httpx.get(demo_url + f"gradio_api/call/score_distinct_n/{start.json()['event_id']}", timeout=60).text
    assert "event: error" in events
    assert f"score_distinct_n: `responses` must be text (one response per line), got {kind}." in events


def test_a_deeply_nested_http_api_call_is_a_client_error(demo_url):
    reply = httpx.post(demo_url + "gradio_api/call/score_distinct_n", json={"data": [_nest(500)]}, timeout=60)
    assert reply.status_code == 400
    assert reply.json() == {"error": f"the request's JSON is nested 502 levels deep; at most {MAX_DEPTH} are accepted."}
