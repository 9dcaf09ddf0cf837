"""benchmarks/lm_op_profile.py's split of profiled torch time into matrix products, attention and the rest."""


import torch
from repo_scripts import load_script


def _profile_module():
    return load_script("benchmarks/lm_op_profile.py")


def test_profiled_operators_fall_into_matmul_attention_and_the_rest():
    split = _profile_module().op_seconds
    a, q = torch.randn(96, 96), torch.randn(1, 2, 16, 8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as only_mm:
        torch.mm(a, a)
    parts = split(only_mm)
    assert parts["matmul"] > 0 and parts["attention"] == 0
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as mixed:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
        torch.add(a, 1)
    parts = split(mixed)
    assert parts["matmul"] == 0 and parts["attention"] > 0 and parts["other torch ops"] > 0
    total = sum(e.self_cpu_time_total for e in mixed.key_averages()) / 1e6
    assert abs(sum(parts.values()) - total) < 1e-9  # every operator counted once


def test_the_bf16_ceiling_is_fp32_time_over_the_bf16_routes_non_product_time():
    ceiling = _profile_module().bf16_ceiling
    assert ceiling(3.0, 2.0, 1.0) == {"speed-up": 1.5, "ceiling": 3.0}  # 1 s of the 2 s bf16 route is products
    assert ceiling(3.0, 2.0, 2.0)["ceiling"] == float("inf")  # nothing but products: no bound
