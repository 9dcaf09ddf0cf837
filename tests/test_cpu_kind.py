"""CPU kind detection (:mod:`dialeval.models.cpu`) from fake ``/proc/cpuinfo`` flag lines and torch capability
names, and the one-line refusal of bf16 where it is emulated."""

from __future__ import annotations

import pytest

from dialeval.models import cpu

ZEN4 = "fpu sse sse2 avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16 avx512_vnni"
SKYLAKE = "fpu sse sse2 avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl"
SAPPHIRE = SKYLAKE + " avx512_bf16 avx512_vnni amx_bf16 amx_tile amx_int8"
HASWELL = "fpu sse sse2 avx avx2 fma"


@pytest.mark.parametrize(("flags", "name", "fast"), [
    (ZEN4, "avx512-bf16", True), (SKYLAKE, "avx512", False), (SAPPHIRE, "amx", True), (HASWELL, "avx2", False),
    ("fpu sse sse2", "other", False), ("", "other", False),
])
def test_kind_from_flags(flags, name, fast):
    kind = cpu.kind_from_flags(flags)
    assert (kind.name, kind.fast_bf16) == (name, fast)
    assert cpu.kind_from_flags(flags.split()) == kind  # a collection reads the same as the line


@pytest.mark.parametrize(("cap", "name", "fast"), [
    ("AMX", "amx", True), ("AVX512_BF16", "avx512-bf16", True), ("AVX512", "avx512", False),
    ("AVX2", "avx2", False), ("DEFAULT", "other", False), ("NO AVX", "other", False),
])
def test_kind_from_torch_capability(cap, name, fast):
    assert (cpu.kind_from_capability(cap).name, cpu.kind_from_capability(cap).fast_bf16) == (name, fast)


def test_read_flags_takes_the_first_flags_line(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nmodel name\t: X\nflags\t\t: {ZEN4}\n\nprocessor\t: 1\nflags\t\t: {HASWELL}\n")
    assert cpu.read_flags(str(info)) == ZEN4
    assert cpu.read_flags(str(tmp_path / "missing")) is None
    (tmp_path / "noflags").write_text("processor\t: 0\n")
    assert cpu.read_flags(str(tmp_path / "noflags")) is None


def test_cpu_kind_falls_back_to_torch_without_cpuinfo(monkeypatch):
    import torch

    monkeypatch.setattr(cpu, "read_flags", lambda path=cpu.CPUINFO: None)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512_BF16")
    cpu.cpu_kind.cache_clear()
    try:
        assert cpu.cpu_kind() == cpu.CpuKind("avx512-bf16", True, "torch")
    finally:
        cpu.cpu_kind.cache_clear()


def test_bf16_is_refused_in_one_line_where_it_is_emulated(monkeypatch):
    monkeypatch.setattr(cpu, "cpu_kind", lambda: cpu.kind_from_flags(SKYLAKE))
    with pytest.raises(ValueError, match=r"^--dtype bf16: this CPU \(avx512\) has neither avx512_bf16 nor AMX") as e:
        cpu.check_fast_bf16()
    assert "\n" not in str(e.value)
    monkeypatch.setattr(cpu, "cpu_kind", lambda: cpu.kind_from_flags(ZEN4))
    assert cpu.check_fast_bf16() is None
