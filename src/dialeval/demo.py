"""The full dialeval demo: every metric at once on pasted or uploaded responses, with plots.

``build_demo()`` returns the ``gr.Blocks``; ``launch()`` serves it (``dialeval demo [--port P]``).
The Hugging Face Space in ``spaces/demo/app.py`` is this same app. All parsing, limits, model probing,
caching and plotting live in :mod:`dialeval.ui`; this module only lays the components out and wires them.

Endpoints (for ``gradio_client``): ``/evaluate`` (the inputs in :data:`INPUT_ORDER`, then for each metric
in :data:`dialeval.ui.REGISTRY` order its checkbox and its model, then whether to draw plots) → status,
results table, four plots, JSON file; ``/load_upload`` (a file → the text boxes) and ``/load_example``
(an example title → the text boxes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import ui
from ._version import __version__

INPUT_ORDER = ("responses", "sets", "dialogue", "references", "speakers_predicted", "speakers_gold")
OUTPUT_ORDER = ("status", "results", "lexical_plot", "sem_ent_plot", "nli_plot", "full_plot", "download")

OFFLINE_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_EVALUATE_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "GRADIO_ANALYTICS_ENABLED": "False",
}


def default_examples_dir() -> Path | None:
    """``spaces/demo/examples`` of the source checkout (or ``$DIALEVAL_EXAMPLES_DIR``), if present."""
    env = os.environ.get("DIALEVAL_EXAMPLES_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "spaces" / "demo" / "examples")
    for c in candidates:
        if c.is_dir():
            return c
    return None


def load_examples(directory: str | os.PathLike | None) -> dict[str, dict[str, Any]]:
    """Bundled examples: every ``*.json`` in ``directory`` with a ``title`` and any of the input fields
    (:data:`INPUT_ORDER`, lists of strings or of lists). Sorted by file name."""
    if directory is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(directory).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or "title" not in data:
            continue
        out[str(data["title"])] = data
    return out


def example_texts(example: dict[str, Any]) -> list[str]:
    """An example's fields as the text of the input boxes, in :data:`INPUT_ORDER`."""
    return [
        "\n".join(example.get("responses", [])),
        "\n\n".join("\n".join(s) for s in example.get("sets", [])),
        "\n".join(example.get("dialogue", [])),
        "\n".join(example.get("references", [])),
        "\n".join(", ".join(s) for s in example.get("speakers_predicted", [])),
        "\n".join(", ".join(s) for s in example.get("speakers_gold", [])),
    ]


def evaluate_texts(texts: dict[str, str], selected: dict[str, str | None], limits: ui.Limits | None = None,
                   cache: ui.ModuleCache | None = None) -> tuple[list[ui.MetricOutcome], str]:
    """Run the ``selected`` metrics (name → model or ``None``) on the text boxes' contents.

    Returns the outcomes (one per selected metric, in registry order) and a Markdown status; input
    problems common to all metrics come back as a single ``Input problem`` outcome list of length 0.
    """
    limits = limits or ui.Limits.from_env()
    if not selected:
        return [], "**Nothing to do:** tick at least one metric."
    try:
        inputs = ui.UIInputs.from_text(**{k: texts.get(k, "") for k in INPUT_ORDER}, limits=limits)
    except ui.InputError as exc:
        return [], f"**Input problem:** {exc}"
    outcomes = [ui.run_metric(name, inputs, selected[name], cache) for name in ui.REGISTRY if name in selected]
    lines = []
    for o in outcomes:
        if o.status == "ok":
            lines.append(f"- `{o.name}`: done")
        else:
            lines.append(f"- `{o.name}`: **{o.status}**: {o.message}")
    done = sum(o.status == "ok" for o in outcomes)
    return outcomes, f"**{done} of {len(outcomes)} metrics computed.**\n" + "\n".join(lines)


def _theme() -> Any:
    """Gradio's default look with system fonts: the page makes no request to a font CDN."""
    import gradio as gr

    system = ["ui-sans-serif", "system-ui", "sans-serif"]
    mono = ["ui-monospace", "Consolas", "monospace"]
    return gr.themes.Default(font=system, font_mono=mono)


def build_demo(examples_dir: str | os.PathLike | None = "default", limits: ui.Limits | None = None,
               concurrency: int | None = None) -> Any:
    """The full demo as a ``gr.Blocks`` (queued with ``concurrency`` workers, default
    ``$DIALEVAL_CONCURRENCY`` or 2)."""
    import gradio as gr

    limits = limits or ui.Limits.from_env()
    examples = load_examples(default_examples_dir() if examples_dir == "default" else examples_dir)
    device, dtype = ui.pick_precision()
    first = next(iter(examples.values()), {})
    initial = example_texts(first) if first else [""] * len(INPUT_ORDER)

    with gr.Blocks(title="dialeval demo", analytics_enabled=False) as demo:
        gr.Markdown(
            f"# dialeval {__version__}: dialogue evaluation metrics\n"
            "Paste responses (one per line), response sets (a blank line between sets) or a dialogue, or "
            "upload a JSONL/CSV file; tick the metrics and press **Evaluate**. "
            f"Models run on **{device}** ({dtype or 'fp32'}). Limits: {limits.describe()}."
        )
        with gr.Row():
            with gr.Column(scale=3):
                with gr.Row():
                    example = gr.Dropdown(list(examples), value=next(iter(examples), None), label="Bundled example",
                                          scale=3, elem_id="example")
                    load_example = gr.Button("Load example", scale=1)
                upload = gr.File(label="Upload JSONL / CSV / TXT", file_types=list(ui.UPLOAD_SUFFIXES),
                                 elem_id="upload")
                boxes = {
                    "responses": gr.Textbox(label="Responses (one per line)", lines=8, value=initial[0],
                                            elem_id="responses"),
                    "sets": gr.Textbox(label="Response sets (blank line between sets) — NLI Diversity", lines=8,
                                       value=initial[1], elem_id="sets"),
                    "dialogue": gr.Textbox(label="Dialogue (one turn per line) — FULL", lines=5, value=initial[2],
                                           elem_id="dialogue"),
                }
                with gr.Accordion("Sem-Ent reference responses (the clusters are fitted on these)", open=False):
                    boxes["references"] = gr.Textbox(label="Reference responses (one per line)", lines=6,
                                                     value=initial[3], elem_id="references")
                with gr.Accordion("DialSpk speakers", open=False):
                    boxes["speakers_predicted"] = gr.Textbox(
                        label="Predicted speakers (one story per line, comma-separated)", lines=3,
                        value=initial[4], elem_id="speakers_predicted")
                    boxes["speakers_gold"] = gr.Textbox(
                        label="Gold speakers (one story per line, comma-separated)", lines=3, value=initial[5],
                        elem_id="speakers_gold")
            with gr.Column(scale=2):
                gr.Markdown("### Metrics")
                metric_inputs: list[Any] = []
                for name, spec in ui.REGISTRY.items():
                    ok, reason = ui.availability(name)
                    with gr.Group():
                        check = gr.Checkbox(value=ok, label=f"{spec.label} ({name})", info=spec.summary,
                                            interactive=ok, elem_id=f"use-{name}")
                        model = gr.Dropdown(list(spec.models), value=spec.default_model, allow_custom_value=True,
                                            label="model (Hub id or local path)", visible=spec.needs_model,
                                            elem_id=f"model-{name}")
                        note = gr.Markdown("" if ok else f"*Disabled:* {reason}", elem_id=f"note-{name}")
                    metric_inputs += [check, model]
                    if spec.needs_model:
                        model.change(_recheck(name), model, [check, note], api_name=False)
                draw = gr.Checkbox(value=True, label="Draw plots", elem_id="draw-plots",
                                   info="untick for faster answers when only the numbers matter")
                run = gr.Button("Evaluate", variant="primary", elem_id="evaluate")
        status = gr.Markdown(elem_id="status")
        results = gr.Dataframe(headers=ui.TABLE_HEADERS, label="Results", interactive=False, wrap=True,
                               max_height=1000, elem_id="results")
        with gr.Row():
            lexical_plot = gr.Plot(label="Dist-n / Ent-n")
            sem_ent_plot = gr.Plot(label="Sem-Ent clusters vs reference")
        with gr.Row():
            nli_plot = gr.Plot(label="NLI pair matrices")
            full_plot = gr.Plot(label="FULL follow-ups")
        download = gr.File(label="Results (JSON)", elem_id="download")

        box_list = [boxes[k] for k in INPUT_ORDER]
        # Only the scoring runs under spaces.GPU (ZeroGPU): plots and files are drawn on the CPU after.
        compute_on_gpu = ui.gpu_decorator()(evaluate_texts)

        def on_evaluate(*args: Any) -> tuple[Any, ...]:
            texts = dict(zip(INPUT_ORDER, args[: len(INPUT_ORDER)]))
            *rest, draw_plots = args[len(INPUT_ORDER):]
            selected = {}
            for (name, spec), use, model_name in zip(ui.REGISTRY.items(), rest[0::2], rest[1::2]):
                if use:
                    selected[name] = (model_name or None) if spec.needs_model else None
            outcomes, message = compute_on_gpu(texts, selected, limits)
            if not outcomes:
                return message, [], None, None, None, None, None
            by_name = {o.name: o.result for o in outcomes if o.status == "ok"}
            plots = [None] * 4
            if draw_plots:
                plots = [
                    ui.plot_lexical(by_name),
                    ui.plot_sem_ent(by_name["sem_ent"]) if "sem_ent" in by_name else None,
                    ui.plot_nli(by_name["nli_diversity"]) if "nli_diversity" in by_name else None,
                    ui.plot_full(by_name["full_followup"]) if "full_followup" in by_name else None,
                ]
            meta = {"version": __version__, "device": device, "dtype": dtype or "fp32",
                    "models": {k: v for k, v in selected.items() if v}}
            path = ui.write_results_file(ui.results_json(outcomes, **meta))
            return (message, ui.result_rows(outcomes), *plots, path)

        run.click(on_evaluate, [*box_list, *metric_inputs, draw],
                  [status, results, lexical_plot, sem_ent_plot, nli_plot, full_plot, download],
                  api_name="evaluate")

        def on_upload(path: str | None) -> tuple[Any, ...]:
            if not path:
                return ("", gr.update(), gr.update(), gr.update())
            try:
                parsed = ui.read_upload(path, limits)
            except ui.InputError as exc:
                gr.Warning(f"Upload rejected: {exc}")
                return (f"**Upload rejected:** {exc}", gr.update(), gr.update(), gr.update())
            return (f"**Loaded** {Path(path).name}: {parsed.summary()}.", "\n".join(parsed.responses),
                    "\n\n".join("\n".join(s) for s in parsed.sets), "\n".join(parsed.dialogue))

        upload.upload(on_upload, upload, [status, boxes["responses"], boxes["sets"], boxes["dialogue"]],
                      api_name="load_upload")

        def on_example(title: str | None) -> tuple[Any, ...]:
            if not title or title not in examples:
                return ("**No example chosen.**", *[gr.update()] * len(INPUT_ORDER))
            src = examples[title].get("source", "")
            return (f"**Example loaded:** {title}. {src}", *example_texts(examples[title]))

        load_example.click(on_example, example, [status, *box_list], api_name="load_example")

    demo.queue(default_concurrency_limit=concurrency or ui._concurrency(), max_size=64)
    return demo


def _recheck(name: str) -> Any:
    def recheck(model_name: str | None) -> tuple[Any, Any]:
        import gradio as gr

        ok, reason = ui.availability(name, model_name)
        return (gr.update(interactive=ok, value=ok),
                gr.update(value="" if ok else f"*Disabled:* {reason}"))

    return recheck


def launch(port: int | None = None, host: str = "127.0.0.1", *, share: bool = False, block: bool = True,
           examples_dir: str | os.PathLike | None = "default", limits: ui.Limits | None = None,
           concurrency: int | None = None, offline: bool = True) -> Any:
    """Serve the demo (``dialeval demo``). ``offline`` sets the Hub/Gradio offline defaults first
    (unless already set), so launching makes no network request."""
    if offline:
        for key, value in OFFLINE_DEFAULTS.items():
            os.environ.setdefault(key, value)
    limits = limits or ui.Limits.from_env()
    demo = build_demo(examples_dir, limits, concurrency)
    demo.launch(**launch_options(port, host, limits), share=share, prevent_thread_lock=not block)
    return demo


def launch_options(port: int | None = None, host: str = "127.0.0.1", limits: ui.Limits | None = None) -> dict[str, Any]:
    """``Blocks.launch`` keyword arguments shared by ``dialeval demo`` and the Space: system fonts, no
    server-side rendering process, errors shown, and a hard upload cap of 5× the checked limit (files
    between the two get dialeval's own message; larger ones are refused by Gradio before reading)."""
    limits = limits or ui.Limits.from_env()
    return {"server_name": host, "server_port": port, "show_error": True, "ssr_mode": False, "theme": _theme(),
            "max_file_size": 5 * limits.max_upload_bytes, "footer_links": ["api"]}
