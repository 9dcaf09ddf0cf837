"""sacrebleu-style signatures: every score names the configuration that produced it."""

from __future__ import annotations

from typing import Any

from dialeval._version import __version__


def _fmt(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(_fmt(v) for v in value)
    if isinstance(value, float):  # short form when it is exact, else every digit: a signature names one value
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    if value is None:
        return "none"
    return str(value).replace("|", "/")


def make_signature(metric: str, **fields: Any) -> str:
    """``metric|key:value|...|version:X`` with keys in the given order; ``None`` fields are kept as ``none``.

    >>> make_signature("mymetric", tok="casual", n=(1, 2))  # doctest: +ELLIPSIS
    'mymetric|tok:casual|n:1,2|version:...'
    """
    parts = [metric] + [f"{k}:{_fmt(v)}" for k, v in fields.items()]
    parts.append(f"version:{__version__}")
    return "|".join(parts)


def parse_signature(signature: str) -> dict[str, str]:
    """Inverse of :func:`make_signature` (values as strings); key ``metric`` holds the metric name."""
    head, *rest = signature.split("|")
    out = {"metric": head}
    for part in rest:
        key, _, value = part.partition(":")
        out[key] = value
    return out
