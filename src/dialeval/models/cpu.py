"""The kind of CPU this process runs on, in one place: which vector/matrix instructions it has and whether bf16
runs natively (``avx512_bf16`` or AMX), read from ``/proc/cpuinfo`` (else torch's
``torch.backends.cpu.get_cpu_capability()``), and its vendor (``vendor_id``), which decides the fp32 product
engine (:mod:`dialeval.models.onednn_linear`).

Kinds, slowest to fastest for model work: ``"avx2"`` (or ``"other"``), ``"avx512"``, ``"avx512-bf16"`` (AVX-512
with native bf16 dot products, e.g. AMD Zen 4 and later) and ``"amx"`` (Intel Sapphire Rapids and later).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

CPUINFO = "/proc/cpuinfo"
KINDS = ("other", "avx2", "avx512", "avx512-bf16", "amx")


@dataclass(frozen=True)
class CpuKind:
    """A CPU kind: its name (one of :data:`KINDS`), whether bf16 runs natively, and the flags it was read from."""

    name: str
    fast_bf16: bool
    source: str = "cpuinfo"


def kind_from_flags(flags: str | set[str] | list[str] | tuple[str, ...]) -> CpuKind:
    """The kind of a CPU with these ``/proc/cpuinfo`` flags (a space-separated line or a collection)."""
    have = set(flags.split()) if isinstance(flags, str) else set(flags)
    amx = "amx_bf16" in have or "amx_tile" in have
    bf16 = "avx512_bf16" in have or "amx_bf16" in have
    if amx:
        name = "amx"
    elif "avx512f" in have and bf16:
        name = "avx512-bf16"
    elif "avx512f" in have:
        name = "avx512"
    elif "avx2" in have:
        name = "avx2"
    else:
        name = "other"
    return CpuKind(name, bf16)


def kind_from_capability(capability: str) -> CpuKind:
    """The kind torch names (``"AVX512_BF16"``, ``"AMX"``, ``"AVX512"``, ``"AVX2"``, ``"DEFAULT"`` …)."""
    cap = capability.upper()
    if "AMX" in cap:
        return CpuKind("amx", True, "torch")
    if "AVX512" in cap:
        bf16 = "BF16" in cap
        return CpuKind("avx512-bf16" if bf16 else "avx512", bf16, "torch")
    if "AVX2" in cap:
        return CpuKind("avx2", False, "torch")
    return CpuKind("other", False, "torch")


def read_field(field: str, path: str = CPUINFO) -> str | None:
    """The first ``field`` line of ``path`` (``flags``, ``vendor_id`` …), or ``None`` when it cannot be read (not
    Linux, not x86)."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == field:
                    return value.strip()
    except OSError:
        return None
    return None


def read_flags(path: str = CPUINFO) -> str | None:
    """The first ``flags`` line of ``path``, or ``None`` when it cannot be read (not Linux, not x86)."""
    return read_field("flags", path)


@functools.lru_cache(maxsize=1)
def cpu_vendor() -> str | None:
    """This machine's ``vendor_id`` (``"GenuineIntel"``, ``"AuthenticAMD"`` …), ``None`` when unknown (read once)."""
    return read_field("vendor_id")


@functools.lru_cache(maxsize=1)
def cpu_kind() -> CpuKind:
    """This machine's :class:`CpuKind` (read once)."""
    flags = read_flags()
    if flags is not None:
        return kind_from_flags(flags)
    try:
        import torch

        return kind_from_capability(str(torch.backends.cpu.get_cpu_capability()))
    except Exception:  # noqa: BLE001 - no torch, or a build without the query: the slowest kind
        return CpuKind("other", False, "unknown")


def check_fast_bf16(option: str = "--dtype bf16") -> None:
    """Refuse bf16 on a CPU without native bf16 (neither ``avx512_bf16`` nor AMX): there it is emulated, slower
    than fp32 and less exact, so it is never worth asking for."""
    kind = cpu_kind()
    if not kind.fast_bf16:
        raise ValueError(f"{option}: this CPU ({kind.name}) has neither avx512_bf16 nor AMX, so bf16 runs slower "
                         "than fp32 here; leave the dtype at fp32 (drop the option) or run on a GPU.")
