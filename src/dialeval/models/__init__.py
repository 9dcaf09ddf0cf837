"""The model layer: devices and dtypes, model folders and the offline Hub cache, loading and caching models,
the ONNX Runtime backends, sentence encoders, causal LMs, and the shared-prefix machinery that FULL and the LLM
judge both run.

It may import :mod:`dialeval.io` and :mod:`dialeval.resources`, never a metric family, the meta-evaluation,
the hub or the UI.
"""
