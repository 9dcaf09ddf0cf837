"""Sem-Ent embedding speed against the strongest peer at the same precision and thread count.

    python benchmarks/sem_ent_speed.py --quick            # 256 responses, 3 rounds, MiniLM fp32 + bf16
    python benchmarks/sem_ent_speed.py --threads 1 --n 1024 --repeats 5 [--large 32]

Workload: distinct DailyDialog test responses in a seeded random order (duplicates removed, so dialeval's
de-duplication buys nothing here), all-MiniLM-L6-v2 (the offline default encoder). Interleaved in one
process and at the same precision (fp32, then bf16):

- dialeval ``SentenceTransformerEncoder.encode`` (chunked, tokenize-once, token-length-sorted batches of up
  to 256 texts and 1,024 padded tokens: its defaults);
- peer: sentence-transformers ``SentenceTransformer.encode(batch_size=32)`` (its default; its own
  character-length sort), and the same with ``batch_size=256``, with the model cast to the same dtype;
- reference column: the Sem-Ent reference featurizer's scheme (fixed batches of 32 in input order,
  ``output_hidden_states=True``), applied to the same model with mean pooling.

``--large N`` adds a random-weight model shaped like microsoft/DialoGPT-large (the paper's encoder; no
ecosystem peer pools the last token, so only the reference scheme is compared). FLOPs per item follow
:func:`_common.forward_flops`; "useful" counts real tokens, "executed" includes each scheme's padding.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    batched_flops,
    fixed_batches,
    interleaved,
    machine_line,
    matmul_peak,
    non_embedding_params,
    offline,
    table,
)

offline()

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = (REPO / ".." / "shared" / "data").resolve()


def sample_texts(n: int) -> list[str]:
    from sem_ent import dailydialog_responses

    texts = list(dict.fromkeys(dailydialog_responses(DATA / "dailydialog" / "test.json")))
    order = np.random.default_rng(0).permutation(len(texts))
    return [texts[i] for i in order[:n]]


def mean_pool_reference(bert, tok, texts: list[str], max_length: int) -> np.ndarray:
    """Fixed batches of 32 in input order, ``output_hidden_states=True``, masked mean of the last layer."""
    out = []
    for s in range(0, len(texts), 32):
        enc = tok(texts[s:s + 32], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        with torch.inference_mode():
            h = bert(**enc, output_hidden_states=True).hidden_states[-1].float()
        m = enc["attention_mask"].unsqueeze(-1).float()
        out.append(((h * m).sum(1) / m.sum(1)).numpy())
    return np.concatenate(out)


def cosine_min(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(1).min())


def minilm_rows(texts: list[str], dtype: str, repeats: int, threads: int) -> list[list[str]]:
    from sentence_transformers import SentenceTransformer

    from dialeval.encoders import (
        BATCH_SIZE,
        CPU_MAX_TOKENS,
        SentenceTransformerEncoder,
        default_encoder_path,
    )
    from dialeval.runtime import length_sorted_batches, resolve_dtype

    torch_dtype = resolve_dtype(dtype)
    ours = SentenceTransformerEncoder(default_encoder_path(), dtype=dtype)
    peer = SentenceTransformer(str(default_encoder_path()), device="cpu")
    peer.to(torch_dtype)
    bert = peer[0].auto_model
    tok, limit = peer.tokenizer, peer.max_seq_length
    lengths = ours.token_lengths(texts)
    cfg = bert.config
    shape = (non_embedding_params(bert), cfg.num_hidden_layers, cfg.hidden_size)
    schemes = {
        "dialeval": length_sorted_batches(lengths, BATCH_SIZE, CPU_MAX_TOKENS),
        "sentence-transformers encode(batch_size=32)": fixed_batches(np.argsort([-len(t) for t in texts]), 32),
        "sentence-transformers encode(batch_size=256)": fixed_batches(np.argsort([-len(t) for t in texts]), 256),
        "reference scheme (input order, batches of 32)": fixed_batches(range(len(texts)), 32),
    }
    runs = {
        "dialeval": lambda: ours.encode(texts, progress=False),
        "sentence-transformers encode(batch_size=32)": lambda: peer.encode(texts, batch_size=32),
        "sentence-transformers encode(batch_size=256)": lambda: peer.encode(texts, batch_size=256),
        "reference scheme (input order, batches of 32)": lambda: mean_pool_reference(bert, tok, texts, limit),
    }
    for fn in runs.values():  # warm-up
        fn()
    peak = matmul_peak(torch_dtype)
    secs, outs = interleaved(runs, repeats)
    rows = []
    for name in runs:
        useful, executed = batched_flops(lengths, schemes[name], *shape)
        rate = len(texts) / secs[name]
        rows.append([f"MiniLM {dtype}: {name}", f"{rate:.1f}", f"{secs['dialeval'] / secs[name]:.2f}",
                     f"{useful / len(texts) / 1e9:.3f}", f"{executed / len(texts) / 1e9:.3f}",
                     f"{peak / 1e9:.0f}", f"{100 * useful / secs[name] / peak:.0f}%",
                     f"{100 * executed / secs[name] / peak:.0f}%"])
    peer_name = "sentence-transformers encode(batch_size=32)"
    print(f"MiniLM {dtype}: dialeval / sentence-transformers = {secs[peer_name] / secs['dialeval']:.2f}x; "
          f"min cosine dialeval vs sentence-transformers {cosine_min(outs['dialeval'], np.asarray(outs[peer_name])):.6f}",
          flush=True)
    return rows


def large_rows(n: int, repeats: int) -> list[list[str]]:
    from sem_ent import dailydialog_responses, reference_scheme
    from transformers import GPT2Model, GPT2Tokenizer

    from dialeval.encoders import LastTokenEncoder
    from dialeval.runtime import length_sorted_batches
    from dialeval.testing import train_bpe_tokenizer
    from dialeval.testing.gpt2 import EOT, dialogpt_large_config

    tok_dir = REPO / "artifacts" / "bench_tokenizer"
    train_bpe_tokenizer(tok_dir, GPT2Tokenizer, vocab_size=8000,
                        texts=dailydialog_responses(DATA / "dailydialog" / "validation.json"),
                        special_tokens={"bos_token": EOT, "eos_token": EOT, "unk_token": EOT})
    torch.manual_seed(0)
    model = GPT2Model(dialogpt_large_config()).eval()
    texts = sample_texts(n)
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        model.to(dtype)
        enc = LastTokenEncoder.from_model(model, GPT2Tokenizer.from_pretrained(tok_dir), name="dialogpt-large-shape")
        ids = enc.token_ids(texts)
        lengths = [len(x) for x in ids]
        shape = (non_embedding_params(model), model.config.n_layer, model.config.n_embd)
        runs = {"dialeval": lambda e=enc: e.encode(texts, progress=False),
                "reference scheme (input order, batches of 32)": lambda i=ids: reference_scheme(model, i)}
        peak = matmul_peak(dtype)
        secs, _ = interleaved(runs, repeats)
        schemes = {"dialeval": length_sorted_batches(lengths, 32),
                   "reference scheme (input order, batches of 32)": fixed_batches(range(n), 32)}
        for name in runs:
            useful, executed = batched_flops(lengths, schemes[name], *shape)
            rows.append([f"DialoGPT-large shape {str(dtype)[6:]}: {name}", f"{n / secs[name]:.2f}",
                         f"{secs['dialeval'] / secs[name]:.2f}", f"{useful / n / 1e9:.2f}", f"{executed / n / 1e9:.2f}",
                         f"{peak / 1e9:.0f}", f"{100 * useful / secs[name] / peak:.0f}%",
                         f"{100 * executed / secs[name] / peak:.0f}%"])
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1024, help="distinct responses (MiniLM)")
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds (median reported)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--dtypes", nargs="+", default=["fp32", "bf16"])
    p.add_argument("--large", type=int, default=0, help="also N responses through a DialoGPT-large-shaped model")
    p.add_argument("--quick", action="store_true", help="--n 256 --repeats 3")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.repeats = 256, 3
    torch.set_num_threads(args.threads)
    texts = sample_texts(args.n)
    rows = []
    for dtype in args.dtypes:
        rows += minilm_rows(texts, dtype, args.repeats, args.threads)
    if args.large:
        rows += large_rows(args.large, max(1, args.repeats // 2))
    print(f"\n{len(texts)} distinct DailyDialog test responses; torch {torch.__version__}; {machine_line(args.threads)}")
    print(table(["configuration", "resp/s", "vs dialeval", "useful GFLOP/resp", "executed GFLOP/resp",
                 "peak GFLOP/s", "useful % peak", "executed % peak"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
