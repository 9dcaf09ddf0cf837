"""Running one metric for a request, driven by its declaration (:mod:`dialeval.registry`).

- :func:`compute_kwargs` turns :class:`~dialeval.ui.inputs.UIInputs` into ``compute`` keyword arguments
  from the declaration's input kind, ``references_option``/``resources`` and ``ui_options``;
- :func:`availability` says, without touching the network, whether a metric can run here (module
  installed, model present locally or fetchable, through the declaration's ``probe``);
- :func:`run_metric` runs it through the module cache and reports instead of raising.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dialeval import registry
from dialeval.registry import MetricDeclaration
from dialeval.ui.cache import MODULES, ModuleCache
from dialeval.ui.devices import pick_precision
from dialeval.ui.inputs import InputError, UIInputs
from dialeval.ui.serving import active_policy

# ---------------------------------------------------------------------------------------------------
# Inputs → compute keyword arguments, by input kind


def _need(values: list[Any], decl: MetricDeclaration, box: str) -> None:
    if not values:
        raise InputError(f"{decl.name} needs {box}; fill that box (or upload a file) or untick {decl.name}.")


def _responses(decl: MetricDeclaration, inputs: UIInputs) -> dict[str, Any]:
    texts = list(inputs.responses)
    if not texts and inputs.sets:  # said, never done silently: the sets are not this metric's input
        raise InputError(f"{decl.name} reads the Responses box, which is empty (the Response sets box is not "
                         f"used for it); paste responses there (one per line) or untick {decl.name}.")
    _need(texts, decl, "responses (one per line)")
    return {"predictions": texts}


def _response_sets(decl: MetricDeclaration, inputs: UIInputs) -> dict[str, Any]:
    _need(inputs.sets, decl, "response sets (a blank line between sets)")
    small = [i + 1 for i, s in enumerate(inputs.sets) if len(s) < 2]
    if small:
        raise InputError(f"{decl.name}: set {small[0]} has a single response; each set needs at least two.")
    return {"predictions": inputs.sets}


def _dialogue(decl: MetricDeclaration, inputs: UIInputs) -> list[str]:
    _need(inputs.dialogue, decl, "a dialogue (one turn per line)")
    if len(inputs.dialogue) < 2:
        raise InputError(f"{decl.name}: the dialogue needs at least two turns.")
    return inputs.dialogue


def _dialogues(decl: MetricDeclaration, inputs: UIInputs) -> dict[str, Any]:
    return {"dialogues": [_dialogue(decl, inputs)]}


def _turns(decl: MetricDeclaration, inputs: UIInputs) -> dict[str, Any]:
    """The dialogue's last turn as the response to the turns before it."""
    turns = _dialogue(decl, inputs)
    return {"contexts": [turns[:-1]], "predictions": [turns[-1]]}


def _speakers(decl: MetricDeclaration, inputs: UIInputs) -> dict[str, Any]:
    _need(inputs.speakers_predicted, decl, "predicted speakers (one story per line, comma-separated)")
    _need(inputs.speakers_gold, decl, "gold speakers (one story per line, comma-separated)")
    if len(inputs.speakers_predicted) != len(inputs.speakers_gold):
        raise InputError(f"{decl.name}: {len(inputs.speakers_predicted)} predicted stories but "
                         f"{len(inputs.speakers_gold)} gold stories; give one line per story in both boxes.")
    return {"predictions": inputs.speakers_predicted, "references": inputs.speakers_gold}


def _story_turns(decl: MetricDeclaration, inputs: UIInputs) -> dict[str, Any]:
    _need(inputs.turns_generated, decl, "generated turns (one per line, a blank line between stories)")
    _need(inputs.turns_gold, decl, "gold turns (one per line, a blank line between stories)")
    if len(inputs.turns_generated) != len(inputs.turns_gold):
        raise InputError(f"{decl.name}: {len(inputs.turns_generated)} generated stories but "
                         f"{len(inputs.turns_gold)} gold stories; separate stories by one blank line in both boxes.")
    return {"predictions": inputs.turns_generated, "references": inputs.turns_gold}


def _referenced(decl: MetricDeclaration, inputs: UIInputs) -> dict[str, Any]:
    """Responses and their references, one per line, aligned."""
    texts = list(inputs.responses)
    _need(texts, decl, "responses (one per line)")
    _need(inputs.references, decl, "reference responses (one per line, aligned with the responses)")
    if len(inputs.references) != len(texts):
        raise InputError(f"{decl.name}: {len(texts)} responses but {len(inputs.references)} references; give one "
                         "reference per response, line by line.")
    return {"predictions": texts, "references": list(inputs.references)}


#: Input kind (:data:`dialeval.registry.INPUT_KINDS`) → the ``compute`` arguments it reads from the boxes.
INPUT_BUILDERS: dict[str, Callable[[MetricDeclaration, UIInputs], dict[str, Any]]] = {
    "responses": _responses,
    "response_sets": _response_sets,
    "dialogues": _dialogues,
    "turns": _turns,
    "speakers": _speakers,
    "story_turns": _story_turns,
    "references": _referenced,
}


def _check_built_with(decl: MetricDeclaration, option: str, folder: Path, model: str | None) -> None:
    """A packaged resource records the model it was built with (its JSON manifest's ``model_option``
    key); another model cannot use it."""
    if not (decl.model_option and model):
        return
    for manifest in sorted(folder.glob("*.json")):
        built = json.loads(manifest.read_text(encoding="utf-8")).get(decl.model_option)
        if isinstance(built, str) and built != model.strip():
            raise InputError(f"{decl.name}: the bundled {option} was fitted with {built!r}, not {model!r}; paste "
                             f"reference responses to fit one with this {decl.model_option}, or choose {built!r}.")


def _reference_kwargs(decl: MetricDeclaration, inputs: UIInputs, model: str | None) -> dict[str, Any]:
    """The reference responses (when the metric takes them and some were given), else its packaged
    ``resources``."""
    if decl.references_option and inputs.references:
        return {decl.references_option: list(inputs.references)}
    out: dict[str, Any] = {}
    for option in decl.resources:
        folder = decl.resource(option)
        if folder is None:
            raise InputError(f"{decl.name} needs reference responses (one per line): no bundled {option} "
                             "was found.")
        _check_built_with(decl, option, folder, model)
        out[option] = str(folder)
    return out


def compute_kwargs(decl: MetricDeclaration, inputs: UIInputs, model: str | None = None) -> dict[str, Any]:
    """The ``compute`` keyword arguments of ``decl`` for ``inputs``; :class:`InputError` when a box it
    needs is empty or malformed."""
    kwargs = INPUT_BUILDERS[decl.inputs](decl, inputs)
    kwargs.update(_reference_kwargs(decl, inputs, model))
    kwargs.update(decl.ui_options)
    return kwargs


# ---------------------------------------------------------------------------------------------------
# Availability


def probe(decl: MetricDeclaration) -> Callable[[str], str | None]:
    """The declaration's model probe (default: :func:`dialeval.models.probes.probe_model`)."""
    from dialeval.models.probes import probe_model

    return decl.probe_function() or probe_model


def default_model(decl: MetricDeclaration) -> str | None:
    """The first model of the short list that can load here (offline: one that is present), else the
    first of the list (shown disabled with its reason)."""
    check = probe(decl)
    for model in decl.models:
        if check(model) is None:
            return model
    return decl.models[0] if decl.models else None


def module_missing(name: str) -> str | None:
    """Why the metric's code is not installed here, or ``None``."""
    try:
        decl = registry.get(name)
    except ValueError:
        return f"{name!r} is not a dialeval metric."
    module_name = decl.module.partition(":")[0]
    try:
        found = importlib.util.find_spec(module_name) is not None
    except ImportError:
        found = False
    if not found:
        return f"the {name} module is not installed in this version of dialeval."
    try:
        _ = decl.script_dir
    except FileNotFoundError as exc:
        return str(exc)
    return None


def availability(name: str, model: str | None = None, cache: ModuleCache | None = None) -> tuple[bool, str]:
    """(can run, reason or status line) for metric ``name`` with ``model`` (default: its first that loads)."""
    missing = module_missing(name)
    if missing:
        return False, missing
    decl = registry.get(name)
    if not decl.needs_model:  # a metric on a fixed model (no model option) still needs that model present
        reason = probe(decl)(decl.models[0]) if decl.models and decl.probe_function() else None
        return (False, reason) if reason else (True, "ready")
    try:  # on a public server, a model that is not offered is refused before any look at the disk; not text: refused
        model = active_policy().check_model(name, model) or default_model(decl) or ""
    except InputError as exc:
        return False, str(exc)
    failed = (cache or MODULES).failure(name, model)
    if failed:
        return False, failed
    reason = probe(decl)(model)
    if reason:
        return False, reason
    return True, f"ready ({model})"


def device_options(name: str) -> dict[str, Any]:
    """``device``/``dtype`` load options for a metric whose declaration has them."""
    declared = {o.name for o in registry.get(name).options}
    device, dtype = pick_precision()
    out: dict[str, Any] = {}
    if "device" in declared:
        out["device"] = device
    if "dtype" in declared and dtype is not None:
        out["dtype"] = dtype
    return out


# ---------------------------------------------------------------------------------------------------
# Running


@dataclass
class MetricOutcome:
    """One metric's result (or why it did not run)."""

    name: str
    status: str  # "ok" | "skipped" | "unavailable" | "error"
    result: dict[str, Any] | None = None
    message: str = ""


def _load_options(decl: MetricDeclaration, model: str | None) -> dict[str, Any]:
    if not decl.needs_model:
        return {}
    options: dict[str, Any] = {decl.model_option: model} if model else {}
    options.update(device_options(decl.name))
    return options


def run_metric(name: str, inputs: UIInputs, model: str | None = None, cache: ModuleCache | None = None,
               *, options: dict[str, Any] | None = None, progress: bool = False) -> MetricOutcome:
    """Run one metric on parsed inputs; never raises for input, model or metric errors. ``options`` are
    extra ``compute`` options (the widget's); ``progress`` turns on the metric's progress bars (when it
    has a ``progress`` option) for the browser to follow."""
    from dialeval.cli import error_line, is_user_error
    from dialeval.models.runtime import Cancelled, ModelNotAvailableError

    cache = cache or MODULES
    decl = registry.get(name)
    model = ((model or default_model(decl) or "").strip() or None) if decl.needs_model else None
    ok, reason = availability(name, model, cache)
    if not ok:
        return MetricOutcome(name, "unavailable", message=reason)
    try:
        kwargs = compute_kwargs(decl, inputs, model)
    except InputError as exc:
        return MetricOutcome(name, "skipped", message=str(exc))
    kwargs.update(options or {})
    if progress and any(o.name == "progress" for o in decl.options):
        kwargs["progress"] = True
    try:
        # The model goes with the call, not the load: one module per metric, whatever models clients name.
        result = cache.compute(name, {**_load_options(decl, model), **kwargs}, decl.ui_config)
    except ModelNotAvailableError as exc:
        if model:
            cache.record_failure(name, model, error_line(exc))
        return MetricOutcome(name, "unavailable", message=error_line(exc))
    except Cancelled:
        raise  # the request is gone: stop here, do not start the next metric
    except Exception as exc:  # noqa: BLE001 - bad options, CUDA OOM…: one failing metric must not stop the others
        return MetricOutcome(name, "error", message=error_line(exc) if is_user_error(exc)
                             else f"{type(exc).__name__}: {error_line(exc)}")
    return MetricOutcome(name, "ok", result=result)


def place_models_on_cuda(names: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """Load the default model of every model metric (of ``names``, default all) that can run here onto CUDA, at import (ZeroGPU's rule:
    models are placed at module level, not inside the ``spaces.GPU`` function), with the device and dtype
    requests use (:func:`pick_precision`), through each declaration's ``loader`` into the process-wide cache.
    Nothing happens without CUDA. Returns the (metric, model) pairs placed."""
    device, dtype = pick_precision()
    if not device.startswith("cuda"):
        return []
    placed = []
    for decl in registry.declarations().values():
        if names is not None and decl.name not in names:
            continue
        load = decl.loader_function()
        model = default_model(decl) if decl.needs_model else None
        if load is None or model is None or not availability(decl.name, model)[0]:
            continue
        load(model, device=device, dtype=dtype)
        placed.append((decl.name, model))
    return placed


def prepare_models(log: Callable[[str], None], names: Sequence[str] | None = None) -> list[tuple[str, str, float]]:
    """Load the default model of every model metric (of ``names``, default all) that can run here, with the device
    and dtype requests use, so that the first Evaluate does not wait for them: on a cold cache this is when the
    embedded models are converted to ONNX Runtime graphs (once). ``log`` gets a line before and one per model, with
    its time; a model that fails to load is logged and left to the request (which then says why). Returns the
    (metric, model, seconds) of the models loaded."""
    import time

    from dialeval.cli import error_line
    from dialeval.models.runtime import cache_dir

    device, dtype = pick_precision()
    todo = []
    for decl in registry.declarations().values():
        load = decl.loader_function()
        model = default_model(decl) if decl.needs_model else None
        if (names is None or decl.name in names) and load is not None and model is not None \
                and availability(decl.name, model)[0]:
            todo.append((decl.name, model, load))
    if todo:
        log(f"preparing {len(todo)} model{'s' if len(todo) != 1 else ''} on {device} before serving; the first start converts them to ONNX once, "
            f"into {cache_dir() / 'onnx'} (minutes; later starts take seconds; --no-prepare skips this step)")
    done = []
    for i, (name, model, load) in enumerate(todo, 1):
        start = time.perf_counter()
        try:
            loaded = load(model, device=device, dtype=dtype)
            export = getattr(getattr(loaded, "onnx", None), "export_graphs", None)
            if callable(export):  # an LM on ONNX Runtime: the graphs it would export at the first request
                export()
        except Exception as exc:  # noqa: BLE001 - the request reports it again, with its metric
            log(f"{name} ({i} of {len(todo)}): {model} did not load: {error_line(exc)}")
            continue
        done.append((name, model, time.perf_counter() - start))
        log(f"{name} ({i} of {len(todo)}): {model} ready in {done[-1][2]:.1f} s")
    return done
