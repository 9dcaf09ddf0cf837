"""The per-metric Space widget (:func:`metric_widget`), built from the metric's declaration: its input
boxes opened on the declaration's worked ``example``, its model choice, the options marked
``widget=True``, a Compute button with progress, the results table, its plot and the raw JSON.

Replaces evaluate 0.4.6's ``launch_gradio_widget`` (broken on Gradio 6) in each metric Space's ``app.py``.
"""

from __future__ import annotations

from typing import Any

from dialeval import registry
from dialeval.registry import MetricDeclaration, Option
from dialeval.ui.blocks import named
from dialeval.ui.devices import concurrency as default_concurrency
from dialeval.ui.devices import gpu_decorator, metric_gpu_duration
from dialeval.ui.inputs import BOXES, InputError, Limits, UIInputs, box_text, boxes_for
from dialeval.ui.mcp import add_tools, only_metric_tools
from dialeval.ui.plots import plot_panel
from dialeval.ui.results import TABLE_HEADERS, result_rows, results_json, results_table, to_jsonable
from dialeval.ui.scoring import availability, default_model, run_metric
from dialeval.ui.serving import Server, ServerPolicy, gated, prepare

DEFAULT_CHOICE = "(default)"


def example_boxes(decl: MetricDeclaration) -> dict[str, str]:
    """The declaration's worked ``example`` (``compute`` arguments) as the text of its input boxes."""
    ex = decl.example
    values: dict[str, Any] = {}
    if decl.inputs == "responses":
        values["responses"] = ex.get("predictions", [])
    elif decl.inputs == "response_sets":
        values["sets"] = ex.get("predictions", [])
    elif decl.inputs == "dialogues":
        values["dialogue"] = (ex.get("dialogues") or [[]])[0]
    elif decl.inputs == "turns":
        values["dialogue"] = [*(ex.get("contexts") or [[]])[0], *(ex.get("predictions") or [])[:1]]
    elif decl.inputs == "speakers":
        values.update(speakers_predicted=ex.get("predictions", []), speakers_gold=ex.get("references", []))
    elif decl.inputs == "references":
        values.update(responses=ex.get("predictions", []),
                      references=[r if isinstance(r, str) else r[0] for r in ex.get("references", [])])
    elif decl.inputs == "story_turns":
        values.update(turns_generated=ex.get("predictions", []), turns_gold=ex.get("references", []))
    if decl.references_option:
        values["references"] = ex.get(decl.references_option) or []
    return {box: box_text(box, value) for box, value in values.items()}


def option_component(option: Option) -> Any:
    """A Gradio component for one ``widget=True`` option (choices → dropdown, numbers → number box,
    flags → checkbox, n-gram orders and text → text box; empty = the metric's default)."""
    import gradio as gr

    label = f"{option.name}: {option.help}" if option.help else option.name
    if option.choices:
        choices = [DEFAULT_CHOICE if c is None else str(c) for c in option.choices]
        value = DEFAULT_CHOICE if option.default is None else str(option.default)
        return gr.Dropdown(choices, value=value, label=label, elem_id=f"option-{option.name}")
    if option.type in ("int", "float"):
        return gr.Number(value=option.default, label=label, precision=0 if option.type == "int" else None,
                         elem_id=f"option-{option.name}")
    if option.type == "bool":
        return gr.Checkbox(value=bool(option.default), label=label, elem_id=f"option-{option.name}")
    value = "" if option.default is None else ",".join(map(str, option.default)) if option.type == "ints" \
        else str(option.default)
    return gr.Textbox(value=value, label=label, placeholder="empty: the default", elem_id=f"option-{option.name}")


def option_value(option: Option, raw: Any) -> Any:
    """What a widget option's component holds, as the ``compute`` option value (``None`` = default)."""
    if raw is None or (isinstance(raw, str) and raw.strip() in ("", DEFAULT_CHOICE)):
        return None
    if option.type == "ints":
        try:
            return [int(p) for p in str(raw).replace(" ", ",").split(",") if p]
        except ValueError:
            raise InputError(f"{option.name}: {raw!r} is not a list of integers; write e.g. 1,2,3.") from None
    if option.type == "int":
        return int(raw)
    if option.type == "float":
        return float(raw)
    return raw


def _widget_options(decl: MetricDeclaration) -> list[Option]:
    return [o for o in decl.options if o.widget]


def _header(decl: MetricDeclaration, limits: Limits) -> str:
    links = " · ".join(f"[{paper}]({url})" for paper, url in zip(decl.papers, decl.urls))
    return (f"# {decl.emoji} {decl.title} (`{decl.name}`)\n{decl.summary}.\n\n{links}\n\n"
            f"Opens on a worked example; edit it and press **Compute**. Limits: {limits.describe()}.")


def _input_boxes(decl: MetricDeclaration) -> list[Any]:
    import gradio as gr

    example = example_boxes(decl)
    boxes = []
    for box in boxes_for(decl.inputs, decl.references_option is not None):
        label, hint = BOXES[box]
        if box == "references" and decl.resources:
            hint += "; empty: the bundled " + ", ".join(decl.resources)
        boxes.append(gr.Textbox(label=f"{label} ({hint})", lines=4 if box == "references" else 8,
                                value=example.get(box, ""), elem_id=f"{decl.name}-{box}"))
    return boxes


def api_parameters(decl: MetricDeclaration) -> list[str]:
    """``/compute``'s parameter names: the metric's boxes, ``model`` for a model metric, then its
    ``widget=True`` options (all optional: each defaults to the widget's initial value)."""
    return [*boxes_for(decl.inputs, decl.references_option is not None), *(["model"] if decl.needs_model else []),
            *(o.name for o in _widget_options(decl))]


def _compute_function(decl: MetricDeclaration, limits: Limits, server: Server) -> Any:
    """``/compute`` as a gated event (:func:`dialeval.ui.serving.gated`: a slot held until the computation stops,
    cancellation, the per-client limit)."""
    names = boxes_for(decl.inputs, decl.references_option is not None)
    n_boxes = len(names)
    options = _widget_options(decl)
    run_on_gpu = gpu_decorator(metric_gpu_duration)(run_metric)  # only the scoring needs the GPU (ZeroGPU)

    def refused(message: str) -> tuple[Any, ...]:
        return f"**Input problem:** {message}", results_table([]), None, None

    def compute(request: Any, *args: Any) -> tuple[Any, ...]:
        texts = args[:n_boxes]
        model_name = args[n_boxes] if decl.needs_model else None
        raw_options = args[n_boxes + int(decl.needs_model):]
        try:
            inputs = UIInputs.from_text(**dict(zip(names, texts)), limits=limits)
            chosen = {o.name: option_value(o, v) for o, v in zip(options, raw_options)}
            if decl.needs_model:  # a Space offers its listed models only (dialeval.ui.serving)
                model_name = server.policy.check_model(decl.name, model_name)
        except (InputError, ValueError, TypeError) as exc:
            return refused(str(exc))
        chosen = {k: v for k, v in chosen.items() if v is not None}
        outcome = run_on_gpu(decl.name, inputs, model_name if decl.needs_model else None, options=chosen,
                             progress=True)
        table, panel = results_table(result_rows([outcome])), plot_panel(decl, outcome)
        if outcome.status != "ok":
            return f"**{outcome.status.capitalize()}:** {outcome.message}", table, panel, None
        return "Done.", table, panel, to_jsonable(outcome.result)

    return gated(server, compute, refused)


def _tool_handler(decl: MetricDeclaration, limits: Limits, server: Server) -> Any:
    """The metric's MCP tool (:mod:`dialeval.ui.mcp`): the boxes and model → ``{metric: result}``; a problem with
    the input or the model is an :class:`InputError` (the tool's error)."""
    run_on_gpu = gpu_decorator(metric_gpu_duration)(run_metric)

    def on_tool(request: Any, texts: dict[str, str], selected: dict[str, Any]) -> dict[str, Any]:
        inputs = UIInputs.from_text(**texts, limits=limits)
        model = server.policy.check_model(decl.name, selected.get(decl.name)) if decl.needs_model else None
        return results_json([run_on_gpu(decl.name, inputs, model)])

    return on_tool


def _model_check(name: str) -> Any:
    def check_model(model: str | None = None) -> tuple[Any, Any]:
        """Whether the metric can run with ``model`` (enables Compute, or says why not). On a public server
        only the offered models are looked at; any other name gets the same refusal."""
        import gradio as gr

        ok, reason = availability(name, model)
        return gr.update(value="" if ok else f"**Unavailable:** {reason}"), gr.update(interactive=ok)

    return check_model


def metric_widget(name: str, limits: Limits | None = None, policy: ServerPolicy | None = None,
                  concurrency: int | None = None) -> Any:
    """A small ``gr.Blocks`` for one metric, built from its declaration (see the module docstring), served under
    the same policy as the full demo (:mod:`dialeval.ui.serving`: ``policy``, default
    :meth:`ServerPolicy.from_env`; the per-client gate; result files cleaned on exit; :func:`prepare`).

    Endpoints: ``/compute`` (:func:`api_parameters` → status, table, plot, raw JSON), for a model metric
    ``/check_model`` (``model`` → status, button), and, when the metric can run, its MCP tool ``/score_<metric>``
    (:mod:`dialeval.ui.mcp`, the only tool listed); nothing else runs Python."""
    import gradio as gr

    decl = registry.get(name)
    limits = limits or Limits.from_env()
    server = Server.create(concurrency or default_concurrency(), policy)
    ok, reason = availability(name)
    with gr.Blocks(title=f"dialeval: {decl.title}", analytics_enabled=False) as demo:
        gr.Markdown(_header(decl, limits))
        boxes = _input_boxes(decl)
        model = gr.Dropdown(list(decl.models), value=default_model(decl), allow_custom_value=True,
                            label="Model (Hub id or local path)", elem_id=f"{name}-model") if decl.needs_model else None
        with gr.Row():
            option_boxes = [option_component(o) for o in _widget_options(decl)]
        status = gr.Markdown("" if ok else f"**Unavailable:** {reason}", elem_id=f"{name}-status")
        button = gr.Button("Compute", variant="primary", interactive=ok)
        table = gr.Dataframe(headers=TABLE_HEADERS, label="Results (rounded; the JSON keeps full precision)",
                             interactive=False, wrap=True, elem_id=f"{name}-results")
        plot = gr.Plot(label=f"{decl.title} plot", visible=decl.plot is not None)
        raw = gr.JSON(label="compute() output (full precision)", open=False, max_height=400)
        names = api_parameters(decl)
        components = [*boxes, *([model] if model is not None else []), *option_boxes]
        button.click(named(_compute_function(decl, limits, server), names), inputs_kwargs=dict(zip(names, components)),
                     outputs=[status, table, plot, raw], api_name="compute", show_progress_on=[status])
        if model is not None:
            model.change(_model_check(name), inputs_kwargs={"model": model}, outputs=[status, button],
                         api_name="check_model")
        add_tools(server, _tool_handler(decl, limits, server), lambda n: n == name and ok)  # its MCP tool, if it runs
    demo.queue(default_concurrency_limit=server.gate.concurrency)
    demo.dialeval_server = server
    return prepare(only_metric_tools(demo))
