"""The fourth pass's messages for ``hostile/tally.py`` (see :mod:`fourth_pass`): each must name the option, the
value and what would be accepted; a message without them counts as ``silent`` (unclear), a traceback as ``crash``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fourth_pass import Attempt, Classify, board, guarded

MESSAGES = "fourth: unclear messages"


def _names(call: Callable[[], Any], *words: str) -> tuple[str, str]:
    """A one-line error holding every one of ``words`` (the option, the value, what is accepted)."""
    try:
        call()
    except (ValueError, TypeError) as exc:
        text = str(exc)
        if "\n" in text:
            return "crash", text[:160]
        return ("one-line" if all(w in text for w in words) else "silent"), text[:160]
    except BaseException as exc:  # noqa: BLE001
        return "crash", f"{type(exc).__name__}: {exc}"[:160]
    return "silent", "no error"


def _depth_guard(path: str, levels: int) -> tuple[str, str]:
    from dialeval.ui.request_depth import DepthGuard

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise RecursionError("the app parsed the deep body")

    sent: list[dict[str, Any]] = []
    body = ('{"params": {"arguments": {"responses": ' + "[" * levels + '"x"' + "]" * levels + "}}}").encode()
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": [(b"content-type", b"application/json")]}
    asyncio.run(DepthGuard(app)(scope, receive, send))
    status = sent[0]["status"]
    text = json.loads(sent[1]["body"])
    line = text["error"]["message"] if "jsonrpc" in text else text["error"]
    return ("one-line" if status == 400 and "at most 64" in line else "crash"), f"HTTP {status}: {line}"


def _tool_type(value: Any) -> tuple[str, str]:
    import gradio as gr

    from dialeval import registry
    from dialeval.ui.mcp import metric_tool

    async def score(progress: Any, request: Any, texts: Any, selected: Any) -> dict[str, Any]:
        return {"distinct_n": {"scores": [0.0]}}

    try:
        asyncio.run(metric_tool(registry.get("distinct_n"), score)(None, value))
    except gr.Error as exc:
        ok = "`responses` must be text (one response per line)" in str(exc.message)
        return ("one-line" if ok else "silent"), str(exc.message)[:160]
    return "silent", "a non-text value reached the metric"


def _hub_unknown_unit(root: Path) -> Callable[[], Any]:
    def call() -> Any:
        from dialeval.meta.publish import write_hub_dataset

        out = root / "lb-hub"
        board(root, out, ["column:mine"])
        report = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
        report["rows"][0]["config"] = "dialog"
        (out / "leaderboard.json").write_text(json.dumps(report), encoding="utf-8")
        return write_hub_dataset(out, root / "hub", "me")

    return call


def message_attempts(root: Path, cli: Classify, lib: Classify) -> list[Attempt]:
    from dialeval.dialstory.dialgen import compute_dialgen
    from dialeval.integrations.lighteval import metric
    from dialeval.semantic.sem_ent import compute_sem_ent
    from dialeval.similarity.quality_vendi import compute_quality_vendi

    root.mkdir(parents=True)
    qv = lambda o: lambda: compute_quality_vendi([["Yes .", "ok", "no"]], kernel="ngram", quality_options=o)  # noqa: E731
    out: list[Attempt] = [
        (MESSAGES, f"quality_options={o!r}", lambda o=o, w=w: _names(qv(o), *w)) for o, w in (
            ("fast", ("quality_options='fast'", "'batch_size'", "'quality'")),
            ({"bogus": 1}, ("quality_options['bogus']=1", "no option 'bogus'", "'quality'")),
            ({"batch_size": 0}, ("quality_options['batch_size']", "=0", "1 ≤ batch_size ≤ 4,096")),
            ({"model": "x"}, ("quality_options['model']='x'", "quality_model=")))]
    out += [
        (MESSAGES, "dialgen core batch_size='8'", lambda: _names(lambda: compute_dialgen(
            [["a b"]], [["a b"]], batch_size="8"), "`batch_size`='8'", "from 1 to 4096")),
        (MESSAGES, "sem_ent core batch_size='8'", lambda: _names(lambda: compute_sem_ent(
            ["a b", "c d"], batch_size="8"), "`batch_size`='8'", "from 1 to 4096")),
        (MESSAGES, "leaderboard --metric-arg bertscore:batch_size='8'", lambda: guarded(lambda: _names(
            lambda: board(root, root / "lb-bs", ["bertscore"], metric_args={"bertscore": {"batch_size": "8"}}),
            "`batch_size`", "'8'", "integer"))),
        (MESSAGES, "MCP call nested 5,000 deep", lambda: guarded(lambda: _depth_guard("/gradio_api/mcp/", 5000))),
        (MESSAGES, "HTTP API call nested 500 deep", lambda: guarded(
            lambda: _depth_guard("/gradio_api/call/score_distinct_n", 500))),
        (MESSAGES, "MCP tool over the HTTP API with a list", lambda: guarded(lambda: _tool_type(["a b"]))),
        (MESSAGES, "MCP tool over the HTTP API with a number", lambda: guarded(lambda: _tool_type(5))),
        (MESSAGES, "lighteval quality_vendi qualities='high'", lambda: _names(
            lambda: metric("quality_vendi", qualities="high"), "`qualities`='high'", "leave it out")),
        (MESSAGES, "hub: a row of a unit the report does not have", lambda: guarded(lambda: _names(
            _hub_unknown_unit(root), "rows[0]", "'d/dialog'", "['d/turn']"))),
    ]
    return out
