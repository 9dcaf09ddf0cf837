"""The full demo's Blocks: the input boxes, one checkbox (and model choice) per declared metric, the
results table, one plot per metric that declares a plot, and the JSON download, all built from
:func:`dialeval.registry.declarations` (no metric is named here).

Endpoints (for ``gradio_client``, every parameter named and optional): ``/evaluate`` with the parameters
of :func:`api_parameters` (the boxes in :data:`INPUT_ORDER`, default empty; ``use_<metric>`` per metric,
default unticked, so a call scores only what it sends and ticks; ``model_<metric>`` per model metric, default
its first model that loads; ``draw_plots``, default true) → the outputs named by :func:`output_order`; ``/load_upload``
(``file`` → every text box: the ones it fills, the others emptied), ``/load_example`` (``title`` → the text boxes) and, per model metric,
``/check_model_<metric>`` (``model`` → whether the metric can run with it: on a public server only the offered
models are looked at, every other name gets the same refusal). The page opens on the first bundled example with
the metrics that can run ticked, set in the browser only (a ``js=`` load, :func:`first_example_js`): the
components' initial values, which are the API defaults, stay empty and unticked. Every event with a Python function is
one of these endpoints or an MCP tool ``/score_<metric>`` (one per metric that can run here, :mod:`dialeval.ui.mcp`:
its boxes and ``model`` → the results JSON); the button and scroll steps run in the browser only (``js=``), so no other function
can be called by ``fn_index``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dialeval import registry
from dialeval._version import __version__
from dialeval.models.runtime import progress_bar
from dialeval.registry import MetricDeclaration
from dialeval.ui.cache import ModuleCache
from dialeval.ui.devices import concurrency as default_concurrency
from dialeval.ui.devices import gpu_decorator, gpu_duration, pick_precision
from dialeval.ui.inputs import BOXES, InputError, Limits, UIInputs, box_text, boxes_for
from dialeval.ui.mcp import add_tools, only_metric_tools
from dialeval.ui.plots import plot_panel
from dialeval.ui.results import TABLE_HEADERS, result_rows, results_json, results_table
from dialeval.ui.scoring import MetricOutcome, availability, default_model, run_metric
from dialeval.ui.serving import Server, ServerPolicy
from dialeval.ui.streaming import gated_stream
from dialeval.ui.uploads import UPLOAD_SUFFIXES, read_upload

INPUT_ORDER = tuple(BOXES)
PRIMARY_BOXES = ("responses", "sets", "dialogue")  # shown open; the others sit in accordions
COLUMN_WIDTHS = ["12%", "13%", "9%", "6%", "40%", "20%"]  # metric, score, value, unit, signature, settings


# Browser-only steps (``js=`` with no backend function, so nothing a client could call by fn_index): the
# Evaluate button disabled while it runs, then enabled again with the results scrolled into view.
BUTTON_BUSY_JS = "() => ({__type__: 'update', interactive: false, value: 'Evaluating…'})"
BUTTON_READY_JS = ("() => { document.getElementById('results')?.scrollIntoView({behavior: 'smooth', block: 'start'}); "
                   "return {__type__: 'update', interactive: true, value: 'Evaluate'}; }")


def plotted() -> list[MetricDeclaration]:
    """The metrics that declare a plot, in registry order (one plot panel each)."""
    return [d for d in registry.declarations().values() if d.plot]


def output_order() -> tuple[str, ...]:
    """The ``/evaluate`` outputs: status, results, ``plot-<metric>`` per plotted metric, download."""
    return ("status", "results", *(f"plot-{d.name}" for d in plotted()), "download")


def api_parameters() -> list[str]:
    """``/evaluate``'s parameter names, in the order of its inputs."""
    per_metric = [[f"use_{d.name}", *([f"model_{d.name}"] if d.needs_model else [])]
                  for d in registry.declarations().values()]
    return [*INPUT_ORDER, *(name for pair in per_metric for name in pair), "draw_plots"]


def named(fn: Any, names: list[str]) -> Any:
    """``fn(progress, request, *values)`` as a Gradio event function whose parameters are ``names``
    (given through ``inputs_kwargs``), so that the API names them instead of ``param_0``…"""
    import inspect

    import gradio as gr

    async def event_async(progress: Any = gr.Progress(track_tqdm=True), request: Any = None,  # noqa: B008
                          **values: Any) -> Any:
        return await fn(progress, request, *(values[name] for name in names))

    def event_sync(progress: Any = gr.Progress(track_tqdm=True), request: Any = None,  # noqa: B008
                   **values: Any) -> Any:  # run by Gradio in a worker thread
        return fn(progress, request, *(values[name] for name in names))

    async def event_stream(progress: Any = gr.Progress(track_tqdm=True), request: Any = None,  # noqa: B008
                           **values: Any) -> Any:  # each value the page shows as it comes
        async for out in fn(progress, request, *(values[name] for name in names)):
            yield out

    event = (event_stream if inspect.isasyncgenfunction(fn) else event_async if inspect.iscoroutinefunction(fn)
             else event_sync)
    event.__annotations__ = {"request": gr.Request}
    return event


def example_texts(example: dict[str, Any]) -> list[str]:
    """An example's fields as the text of the input boxes, in :data:`INPUT_ORDER`."""
    return [box_text(box, example.get(box, [])) for box in INPUT_ORDER]


def evaluate_texts(texts: dict[str, str], selected: dict[str, str | None], limits: Limits | None = None,
                   cache: ModuleCache | None = None,
                   on_outcome: Callable[[list[MetricOutcome], list[str]], None] | None = None,
                   ) -> tuple[list[MetricOutcome], str]:
    """Run the ``selected`` metrics (name → model or ``None``) on the text boxes' contents.

    Returns the outcomes (one per selected metric, in registry order) and a Markdown status; an input
    problem common to all metrics comes back as no outcomes and an ``Input problem`` status. ``on_outcome``
    is called after each metric but the last with the outcomes so far and the metrics still to run (the demo
    shows each row as soon as it is computed).
    """
    limits = limits or Limits.from_env()
    if not selected:
        return [], "**Nothing to do:** tick at least one metric."
    try:
        inputs = UIInputs.from_text(**{k: texts.get(k, "") for k in INPUT_ORDER}, limits=limits)
    except InputError as exc:
        return [], f"**Input problem:** {exc}"
    names = [name for name in registry.declarations() if name in selected]
    outcomes = []
    # A bar naming the metric running ("<metric> (4 of 5)"), the metric's own bars per batch below it; the
    # browser shows them, with the time left, in the single progress display.
    for i, name in enumerate(names):
        bar = progress_bar(total=1, desc=f"{name} ({i + 1} of {len(names)})", delay=0)  # the browser shows it
        outcomes.append(run_metric(name, inputs, selected[name], cache, progress=True))
        bar.update(1)
        bar.close()
        if on_outcome is not None and i + 1 < len(names):
            on_outcome(list(outcomes), names[i + 1:])
    lines = [f"- `{o.name}`: done" if o.status == "ok" else f"- `{o.name}`: **{o.status}**: {o.message}"
             for o in outcomes]
    done = sum(o.status == "ok" for o in outcomes)
    return outcomes, f"**{done} of {len(outcomes)} metrics computed.**\n" + "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# Layout


def _readers(box: str) -> list[str]:
    """Titles of the metrics that read ``box``."""
    return [d.title for d in registry.declarations().values()
            if box in boxes_for(d.inputs, d.references_option is not None)]


def first_example_js(example: dict[str, Any] | None, ticks: list[bool], status: str) -> str:
    """The browser-only page-load step: the boxes get ``example``'s texts, the checkboxes ``ticks`` and the
    status line ``status`` (a ``js=`` function with no backend function, so the API defaults stay empty)."""
    values = [*example_texts(example or {}), *ticks, status]
    return f"() => {json.dumps(values, ensure_ascii=False)}"


def _input_boxes() -> dict[str, Any]:
    """The text boxes, empty (the API default); the page fills them with the first example in the browser."""
    import gradio as gr

    texts = dict.fromkeys(INPUT_ORDER, "")
    boxes: dict[str, Any] = {}
    for box in INPUT_ORDER:
        label, hint = BOXES[box]
        readers = _readers(box)
        full = f"{label} ({hint})" + (f" — {', '.join(readers)}" if readers and box != "responses" else "")
        if box in PRIMARY_BOXES:
            boxes[box] = gr.Textbox(label=full, lines=8 if box != "dialogue" else 5, value=texts[box],
                                    elem_id=box)
            continue
        with gr.Accordion(full, open=False):
            boxes[box] = gr.Textbox(label=f"{label} ({hint})", lines=4, value=texts[box], elem_id=box)
    return boxes


def _metric_choice(decl: MetricDeclaration) -> list[Any]:
    """The checkbox and (for a model metric) the model dropdown of one metric (disabled with the reason
    when it cannot run)."""
    import gradio as gr

    ok, reason = availability(decl.name)
    with gr.Group():
        check = gr.Checkbox(value=False, label=f"{decl.title} ({decl.name})", info=decl.summary, interactive=ok,
                            elem_id=f"use-{decl.name}")
        if not decl.needs_model:  # no hidden input: the API has no model parameter for it
            gr.Markdown("" if ok else f"*Disabled:* {reason}", elem_id=f"note-{decl.name}")
            return [check]
        model = gr.Dropdown(list(decl.models), value=default_model(decl), allow_custom_value=True,
                            label="model (Hub id or local path)", elem_id=f"model-{decl.name}")
        note = gr.Markdown("" if ok else f"*Disabled:* {reason}", elem_id=f"note-{decl.name}")
    model.change(_recheck(decl.name), inputs_kwargs={"model": model}, outputs=[check, note],
                 api_name=f"check_model_{decl.name}")
    return [check, model]


def _recheck(name: str) -> Any:
    def check_model(model: str | None = None) -> tuple[Any, Any]:
        """Whether the metric can run with ``model`` (ticks and enables its checkbox, or says why not). On a
        public server only the offered models are looked at; any other name gets the same refusal."""
        import gradio as gr

        ok, reason = availability(name, model)
        return gr.update(interactive=ok, value=ok), gr.update(value="" if ok else f"*Disabled:* {reason}")

    return check_model


def _plot_panels() -> list[Any]:
    import gradio as gr

    decls = plotted()
    panels = []
    for start in range(0, len(decls), 2):
        with gr.Row():
            panels += [gr.Plot(label=d.title, elem_id=f"plot-{d.name}") for d in decls[start:start + 2]]
    return panels


# ---------------------------------------------------------------------------------------------------
# Events


def _selection(args: tuple[Any, ...]) -> tuple[dict[str, str], dict[str, str | None], bool]:
    """``/evaluate``'s values in :func:`api_parameters` order → (box texts, selected metric → model,
    draw plots)."""
    values = dict(zip(api_parameters(), args))
    texts = {box: values[box] or "" for box in INPUT_ORDER}
    selected = {d.name: (values.get(f"model_{d.name}") or None) if d.needs_model else None
                for d in registry.declarations().values() if values[f"use_{d.name}"]}
    return texts, selected, bool(values["draw_plots"])


def _plot_outputs(outcomes: list[MetricOutcome], draw_plots: bool) -> list[Any]:
    """One panel update per plotted metric (see :func:`dialeval.ui.plots.plot_panel`)."""
    by_name = {o.name: o for o in outcomes}
    return [plot_panel(decl, by_name.get(decl.name), draw_plots,
                       available=decl.name in by_name or availability(decl.name)[0]) for decl in plotted()]


def _scorer(limits: Limits, server: Server) -> Any:
    """``score(texts, selected) -> (outcomes, status, meta)``, shared by ``/evaluate`` and the MCP tools: the
    server's model policy (an :class:`InputError` when refused), then the scoring under ``spaces.GPU`` (ZeroGPU;
    the slot sized by :func:`dialeval.ui.devices.gpu_duration`); plots and files are drawn on the CPU after."""
    device, dtype = pick_precision()
    compute_on_gpu = gpu_decorator(gpu_duration)(evaluate_texts)
    streams = compute_on_gpu is evaluate_texts  # on ZeroGPU the scoring runs in another process: rows at the end

    def score(texts: dict[str, str], selected: dict[str, Any],
              on_outcome: Any = None) -> tuple[list[MetricOutcome], str, dict[str, Any]]:
        selected = server.policy.check_selection(selected)  # InputError → refused(...)
        extra = {"on_outcome": on_outcome} if streams and on_outcome is not None else {}
        outcomes, message = compute_on_gpu(texts, selected, limits, **extra)
        meta = {"version": __version__, "device": device, "dtype": dtype or "fp32",
                "models": {k: v for k, v in selected.items() if v}}
        return outcomes, message, meta

    return score


def _evaluate_handler(server: Server, score: Any) -> Any:
    def refused(message: str) -> tuple[Any, ...]:
        return f"**Input problem:** {message}", results_table([]), *_plot_outputs([], False), None

    def on_evaluate(request: Any, publish: Any, *args: Any) -> tuple[Any, ...]:
        import gradio as gr

        texts, selected, draw_plots = _selection(args)

        def partial(done: list[MetricOutcome], left: list[str]) -> None:  # each row as soon as it is computed
            status = f"**{len(done)} of {len(done) + len(left)} metrics done**; computing `{left[0]}`…"
            publish((status, results_table(result_rows(done)), *[gr.update()] * len(plotted()), None))

        outcomes, message, meta = score(texts, selected, partial)
        if not outcomes:
            return message, results_table([]), *_plot_outputs([], False), None
        path = server.files.write_json(getattr(request, "session_hash", None), results_json(outcomes, **meta))
        return message, results_table(result_rows(outcomes)), *_plot_outputs(outcomes, draw_plots), path

    return gated_stream(server, on_evaluate, refused)


def _tool_handler(score: Any) -> Any:
    """The MCP tools' handler (:mod:`dialeval.ui.mcp`): the results JSON of ``/evaluate``'s download; an input
    problem common to all metrics is an :class:`InputError` (the tool's error)."""
    def on_tool(request: Any, texts: dict[str, str], selected: dict[str, Any]) -> dict[str, Any]:
        outcomes, message, meta = score(texts, selected)
        if not outcomes:
            raise InputError(message.replace("**Input problem:** ", ""))
        return results_json(outcomes, **meta)

    return on_tool


def upload_texts(parsed: Any) -> list[str]:
    """Every box's text after an upload, in :data:`INPUT_ORDER`: the boxes it fills, and every other box
    emptied (an earlier example's speakers or turns must not be scored with the upload)."""
    filled = {"responses": parsed.responses, "sets": parsed.sets, "dialogue": parsed.dialogue}
    return [box_text(box, filled[box]) if box in filled else "" for box in INPUT_ORDER]


def _upload_handler(limits: Limits) -> Any:
    def on_upload(file: str | None = None) -> tuple[Any, ...]:
        import gradio as gr

        path = file
        if not path:
            return "", *[gr.update()] * len(INPUT_ORDER)
        try:
            parsed = read_upload(path, limits)
        except InputError as exc:
            gr.Warning(f"Upload rejected: {exc}")
            return f"**Upload rejected:** {exc}", *[gr.update()] * len(INPUT_ORDER)
        return f"**Loaded** {Path(path).name}: {parsed.summary()}.", *upload_texts(parsed)

    return on_upload


def example_status(title: str, example: dict[str, Any]) -> str:
    """The status line shown with a loaded example."""
    return f"**Example loaded:** {title}. {example.get('source', '')}"


def _example_handler(examples: dict[str, dict[str, Any]]) -> Any:
    def on_example(title: str | None = None) -> tuple[Any, ...]:
        import gradio as gr

        if not isinstance(title, str) or title not in examples:
            return "**No example chosen.**", *[gr.update()] * len(INPUT_ORDER)
        return example_status(title, examples[title]), *example_texts(examples[title])

    return on_example


# ---------------------------------------------------------------------------------------------------
# The Blocks


def _intro(limits: Limits) -> str:
    device, dtype = pick_precision()
    return (f"# dialeval {__version__}: dialogue evaluation metrics\n"
            "Paste responses (one per line), response sets (a blank line between sets) or a dialogue, or "
            "upload a JSONL/CSV file; tick the metrics and press **Evaluate**. "
            f"Models run on **{device}** ({dtype or 'fp32'}). Limits: {limits.describe()}.")


def demo_blocks(examples: dict[str, dict[str, Any]], limits: Limits, concurrency: int | None = None,
                policy: ServerPolicy | None = None) -> Any:
    """The full demo as a queued ``gr.Blocks`` (``concurrency`` requests computed at once, default
    ``$DIALEVAL_CONCURRENCY``) under the server ``policy`` (:mod:`dialeval.ui.serving`)."""
    import gradio as gr

    server = Server.create(concurrency or default_concurrency(), policy)
    first = next(iter(examples), None)

    with gr.Blocks(title="dialeval demo", analytics_enabled=False) as demo:
        gr.Markdown(_intro(limits))
        with gr.Row():
            with gr.Column(scale=3):
                with gr.Row():
                    example = gr.Dropdown(list(examples), value=first, label="Bundled example",
                                          scale=3, elem_id="example")
                    load_example = gr.Button("Load example", scale=1)
                upload = gr.File(label="Upload JSONL / CSV / TXT", file_types=list(UPLOAD_SUFFIXES), elem_id="upload")
                boxes = _input_boxes()
            with gr.Column(scale=2):
                gr.Markdown("### Metrics")
                metric_inputs = [c for d in registry.declarations().values() for c in _metric_choice(d)]
                draw_box = gr.Checkbox(value=True, label="Draw plots", elem_id="draw-plots",
                                       info="untick for faster answers when only the numbers matter")
                run = gr.Button("Evaluate", variant="primary", elem_id="evaluate")
                status = gr.Markdown("", elem_id="status", min_height=40)  # the one progress display, here
        results = gr.Dataframe(headers=TABLE_HEADERS, label="Results (rounded; the JSON keeps full precision)",
                               interactive=False, wrap=True, max_height=1000, elem_id="results",
                               column_widths=COLUMN_WIDTHS)
        plots = _plot_panels()
        download = gr.File(label="Results (JSON)", elem_id="download")
        box_list = [boxes[k] for k in INPUT_ORDER]
        # The server's gate (dialeval.ui.serving) holds the computing slots until a computation has really
        # stopped, and admits each client's requests; Gradio's queue (max_size) holds the rest.
        names = api_parameters()
        score = _scorer(limits, server)
        # While it runs: the button is disabled and the status beside it shows the progress; after, the
        # button comes back and the results scroll into view.
        run.click(None, None, run, js=BUTTON_BUSY_JS, queue=False).then(
            named(_evaluate_handler(server, score), names),
            inputs_kwargs=dict(zip(names, [*box_list, *metric_inputs, draw_box])),
            outputs=[status, results, *plots, download], api_name="evaluate", show_progress_on=[status],
        ).then(None, None, run, js=BUTTON_READY_JS, queue=False)
        upload.upload(_upload_handler(limits), inputs_kwargs={"file": upload}, outputs=[status, *box_list],
                      api_name="load_upload")
        checks = [c for c in metric_inputs if isinstance(c, gr.Checkbox)]
        ticks = [availability(d.name)[0] for d in registry.declarations().values()]
        filled = {box for box, text in zip(INPUT_ORDER, example_texts(examples.get(first) or {})) if text.strip()}
        # ticked on load: a metric that can run and whose every box the first example fills
        on_load = [tick and set(boxes_for(d.inputs)) <= filled for tick, d in zip(ticks, registry.declarations().values())]
        demo.load(None, None, [*box_list, *checks, status], queue=False, js=first_example_js(
            examples.get(first), on_load, example_status(first, examples[first]) if first is not None else ""))
        on_example = _example_handler(examples)
        load_example.click(on_example, inputs_kwargs={"title": example}, outputs=[status, *box_list],
                           api_name="load_example")
        enabled = dict(zip(registry.declarations(), ticks))
        add_tools(server, _tool_handler(score), lambda name: enabled[name])  # MCP tools: one per metric that runs
    demo.queue(default_concurrency_limit=concurrency or default_concurrency(), max_size=64)
    demo.dialeval_server = server
    return only_metric_tools(demo)
