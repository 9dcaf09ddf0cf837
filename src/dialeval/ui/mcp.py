"""MCP tools of the demo: one typed, documented endpoint per metric that can run here, built from the
declarations (no metric is named here).

Gradio serves every named endpoint as an MCP tool when launched with ``mcp_server=True`` (the ``mcp``
package installed, :func:`mcp_available`), deriving the tool's schema from the function's type hints and
its description from the docstring's ``Args:`` section. :func:`metric_tools` builds, per metric, a function
``score_<metric>(<the boxes it reads>: str = "", model: str = "") -> str`` (JSON) whose signature and docstring come
from its declaration, and :func:`add_tools` registers them with ``gr.api`` outside Gradio's queue: Gradio's MCP
server then runs a call in the MCP request's own task, with the MCP client's request (a queued tool would reach
the queue through Gradio's loopback client, and a client that leaves would not cancel it). Each call goes through
the same server gate as ``/evaluate`` (:func:`dialeval.ui.serving.gated`: the per-client limit, the slots, and
cancellation, here when the MCP client disconnects or cancels the call),
the same model policy and the same per-request :class:`~dialeval.ui.inputs.Limits`, and returns the JSON the
demo's download holds (full precision). A metric that did not run (refused input, an absent model, an error) is a
tool error (``isError``) with its one-line reason, never a successful call holding a status.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
from collections.abc import Callable
from typing import Any

from dialeval import registry
from dialeval.registry import INPUT_KINDS, MetricDeclaration
from dialeval.ui.inputs import BOXES, boxes_for
from dialeval.ui.serving import Server, gated

TOOL_PREFIX = "score_"
#: Outcomes of a metric that did not run (:class:`dialeval.ui.scoring.MetricOutcome`): a tool error for an agent.
NOT_RUN = ("skipped", "unavailable", "error")


def mcp_available() -> bool:
    """True when the ``mcp`` package Gradio's MCP server needs is installed (``pip install "gradio[mcp]"``)."""
    return importlib.util.find_spec("mcp") is not None


def tool_boxes(decl: MetricDeclaration) -> tuple[str, ...]:
    """The text boxes a metric's tool takes, in :data:`dialeval.ui.inputs.BOXES` order."""
    return boxes_for(decl.inputs, decl.references_option is not None)


def tool_doc(decl: MetricDeclaration) -> str:
    """The tool's docstring: what the metric measures, then ``Args:`` (one line per parameter, from
    :data:`BOXES` and the declared models), then ``Returns:``."""
    lines = [f"{decl.title}: {decl.summary}. Scores {INPUT_KINDS[decl.inputs]} given as text and returns its "
             "result (full precision, with its signature): the numbers the app's page computes for the same input.",
             "", "Args:"]
    lines += [f"    {box}: {BOXES[box][0]}, {BOXES[box][1]}." for box in tool_boxes(decl)]
    if decl.needs_model:
        lines.append(f"    model: the model (Hub id); empty for the default. Offered: {', '.join(decl.models)}.")
    lines += ["", "Returns:", f"    JSON: {{\"{decl.name}\": the result, or its status and reason}} (the demo adds "
              "\"dialeval\": version, device, dtype and models)."]
    return "\n".join(lines)


def metric_tool(decl: MetricDeclaration, score: Callable[..., Any]) -> Callable[..., Any]:
    """``score_<metric>(request, <boxes>..., [model])``: calls ``score(progress, request, texts, selected)``
    (a :func:`gated` event function) with this metric alone selected."""
    import gradio as gr

    boxes = tool_boxes(decl)

    async def tool(*args: Any) -> str:
        request, *values = args
        names = [*boxes, *(["model"] if decl.needs_model else [])]
        for name, value in zip(names, values):  # the HTTP API route reaches here without the MCP schema's check
            if value is not None and not isinstance(value, str):
                what = f"text ({BOXES[name][1]})" if name in BOXES else "a model name (text), or empty"
                raise gr.Error(f"{TOOL_PREFIX}{decl.name}: `{name}` must be {what}, got {type(value).__name__}.",
                               print_exception=False)
        values = ["" if v is None else v for v in values]
        texts = dict(zip(boxes, values))
        model = (values[len(boxes)] or None) if decl.needs_model else None
        data = await score(None, request, texts, {decl.name: model})
        entry = data.get(decl.name) if isinstance(data, dict) else None
        if isinstance(entry, dict) and entry.get("status") in NOT_RUN:  # refused input: a tool error, one line
            raise gr.Error(f"{decl.name} {entry['status']}: {entry.get('reason') or 'no reason given'}",
                           print_exception=False)
        return json.dumps(data, ensure_ascii=False)

    params = [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=gr.Request)]
    params += [inspect.Parameter(box, inspect.Parameter.POSITIONAL_OR_KEYWORD, default="", annotation=str)
               for box in (*boxes, *(["model"] if decl.needs_model else []))]
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in params} | {"return": str}
    tool.__name__ = tool.__qualname__ = f"{TOOL_PREFIX}{decl.name}"
    tool.__doc__ = tool_doc(decl)
    return tool


def metric_tools(score: Callable[..., Any], enabled: Callable[[str], bool]) -> list[Callable[..., Any]]:
    """One tool per declared metric for which ``enabled(name)`` holds, in registry order."""
    return [metric_tool(d, score) for d in registry.declarations().values() if enabled(d.name)]


def add_tools(server: Server, handler: Callable[..., dict[str, Any]], enabled: Callable[[str], bool]) -> list[str]:
    """Register the tools (inside a ``gr.Blocks`` context) with ``gr.api``, unqueued (see the module docstring);
    ``handler(request, texts, selected)`` returns the results JSON. A refused request (the per-client limit, a limit on the input, a model that is
    not offered) is a tool error with the same one line the demo shows. Returns the tools' names."""
    import gradio as gr

    def refused(message: str) -> Any:
        raise gr.Error(message, print_exception=False)

    score = gated(server, handler, refused)
    names = []
    for tool in metric_tools(score, enabled):
        gr.api(tool, api_name=tool.__name__, queue=False)
        names.append(tool.__name__)
    return names


def only_metric_tools(demo: Any) -> Any:
    """Keep the page's own endpoints (``/evaluate``, uploads, examples, model checks) out of the MCP tool list,
    which then holds the metric tools alone; they stay API endpoints (Gradio lists as tools only functions
    whose ``_mcp_type`` is ``"tool"`` or unset)."""
    for block_fn in getattr(demo, "fns", {}).values():
        fn = block_fn.fn
        if fn is not None and not str(getattr(fn, "__name__", "")).startswith(TOOL_PREFIX):
            fn._mcp_type = "page"
    return demo
