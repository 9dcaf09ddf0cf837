"""FULL with a model: :class:`FollowupScorer` encodes each history once and scores all follow-ups together
in length-sorted batches (seq2seq models reuse the encoder output and its cross-attention keys/values for
every follow-up; causal models run histories as packed token trees, :mod:`dialeval.full.tree`, except on ONNX
Runtime where histories share nothing: those run once each, sharing their past key/values with the follow-ups), and
:func:`full_scores` runs it end to end. The texts, truncation and aggregation are the pure functions of
:mod:`dialeval.full.texts` (De Bruyn et al. 2022).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.full.formulation import (
    AGGREGATIONS,
    chat_pieces,
    check_formulation,
    default_formulation,
    followup_nll,
)
from dialeval.full.hosted import hosted_followup_nll
from dialeval.full.texts import (
    COMPAT_MODES,
    FOLLOW_UPS,
    FULL_0_0_3_FOLLOW_UPS,
    PACKAGE_LOOKBACK,
    aggregate_followups,
    check_follow_ups,
    followup_values,
    keep_last_tokens,
    package_history_text,
    package_turns,
    recent_turns_fitting,
)
from dialeval.full.tree import tree_followup_nll, tree_route_applies
from dialeval.models.lm import (
    LM_CALL_COST,
    history_pass,
    pad_id,
    position_limit,
    shared_history_pass,
)
from dialeval.models.runtime import load_pretrained, run_batched
from dialeval.models.shared_prefix import nested_hosts, pack_groups, prefix_groups

# --------------------------------------------------------------------------------------------------
# Model scoring
# --------------------------------------------------------------------------------------------------

class FollowupScorer:
    """Mean per-token NLL of every follow-up after every history, with one history encoding per item.

    ``lm`` is a :class:`dialeval.models.lm.LoadedLM`. ``separator`` is written after each turn in default mode;
    ``max_length`` caps the history (default: the model's limit, at most 1024 tokens for causal models);
    ``None`` takes the measured default of the model kind or offline model
    (:func:`dialeval.full.formulation.default_formulation`). Causal LMs only:
    ``follow_up_prefix`` (e.g. ``"User: "``) is written after the history and conditioned on, not scored;
    ``chat_template=True`` writes the history with the tokenizer's chat template and the follow-up as the
    next user message (:func:`dialeval.full.formulation.chat_pieces`). Both are kept when truncating.
    """

    def __init__(self, lm: Any, *, separator: str | None = None, max_length: int | None = None,
                 compat: str | None = None, lookback: int = PACKAGE_LOOKBACK, follow_up_prefix: str = "",
                 chat_template: bool = False) -> None:
        if compat is not None and compat not in COMPAT_MODES:
            raise ValueError(f"`compat`={compat!r} is not known; use None or one of {COMPAT_MODES}.")
        if compat and lm.kind != "seq2seq":
            raise ValueError(f"compat={compat!r} reproduces the `full` package, which only runs seq2seq models "
                             f"(BlenderBot); {lm.name!r} is a causal LM. Use compat=None.")
        if separator is not None and not isinstance(separator, str):
            raise TypeError(f"`separator` must be a string or None (the model kind's default), got "
                            f"{type(separator).__name__}.")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 8):
            raise ValueError(f"`max_length` must be an int ≥ 8 (tokens) or None, got {max_length!r}.")
        if isinstance(lookback, bool) or not isinstance(lookback, int) or lookback < 1:
            raise ValueError(f"`lookback` must be an int ≥ 1, got {lookback!r}.")
        check_formulation(lm, compat, follow_up_prefix, chat_template)
        self.follow_up_prefix = follow_up_prefix
        self.chat_template = chat_template
        self.lm = lm
        self.model = lm.model
        self.kind = lm.kind
        self.defaults = default_formulation(lm.kind, compat, getattr(lm, "offline", None))
        self.separator = separator if separator is not None else self.defaults["separator"]
        self.compat = compat
        self.lookback = lookback
        self.tokenizer = lm.tokenizer
        if compat:
            self.tokenizer = _compat_tokenizer(lm)
        self.max_length = max_length or self._model_limit()

    # ---- limits and encoding -------------------------------------------------------------------

    def _model_limit(self) -> int:
        limit = position_limit(self.model, self.tokenizer)
        cap = self.defaults["max_length"]
        return limit if cap is None else min(limit, cap)

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def encode_follow_ups(self, follow_ups: Sequence[str]) -> list[list[int]]:
        """Token ids scored for each follow-up: seq2seq labels (with the tokenizer's end token ``</s>``, as
        the package does); for causal models the follow-up's own tokens, without special tokens."""
        if self.compat:  # the package: tokenizer(f, truncation=True) under as_target_tokenizer() (a no-op there)
            out = [list(self.tokenizer(f, truncation=True)["input_ids"]) for f in follow_ups]
        elif self.kind == "seq2seq":
            out = [list(self.tokenizer(text_target=f)["input_ids"]) for f in follow_ups]
        else:
            out = [list(self.tokenizer(f, add_special_tokens=False)["input_ids"]) for f in follow_ups]
        for f, ids in zip(follow_ups, out):
            if not ids:
                raise ValueError(f"follow-up {f!r} tokenizes to nothing.")
        return out

    def encode_history(self, turns: Sequence[str], budget: int) -> list[int]:
        """Default mode: turns joined by ``separator`` (causal: each turn followed by it), tokenized as one
        text. The oldest turns are dropped to fit ``budget`` tokens (lengths estimated turn by turn, an
        upper bound for byte-level BPE); the last turn is always kept, its oldest tokens cut if it alone is
        too long."""
        tok = self.tokenizer
        sep = self.separator
        causal = self.kind == "causal"
        cue = self.follow_up_prefix
        if self.chat_template:
            pieces, cue = chat_pieces(self._render_chat, turns)
        elif causal:
            pieces = [t + sep for t in turns]
        else:
            pieces = [t if i == 0 else sep + t for i, t in enumerate(turns)]
        lengths = [len(ids) for ids in tok(pieces, add_special_tokens=False)["input_ids"]]
        prefix, suffix = self._special_tokens()
        if causal:
            suffix = list(tok(cue, add_special_tokens=False)["input_ids"]) if cue else []  # never an end token
        start = recent_turns_fitting(lengths, budget - len(prefix) - len(suffix))
        text = "".join(pieces[start:]) if causal else sep.join(turns[start:])
        ids = list(tok(text, add_special_tokens=False)["input_ids"])
        return keep_last_tokens(ids, budget, prefix, suffix)

    def _render_chat(self, messages: list[dict[str, str]]) -> str:
        """The tokenizer's chat template as text, without the BOS token the tokenizer adds itself."""
        text = self.tokenizer.apply_chat_template(messages, tokenize=False)
        bos = getattr(self.tokenizer, "bos_token", None)
        return text[len(bos):] if bos and self._special_tokens()[0] and text.startswith(bos) else text

    def _special_tokens(self) -> tuple[list[int], list[int]]:
        """The special tokens the tokenizer puts before and after a text (BlenderBot appends ``</s>``)."""
        if not hasattr(self, "_specials"):
            tok = self.tokenizer
            with_specials = list(tok("a", add_special_tokens=True)["input_ids"])
            bare = list(tok("a", add_special_tokens=False)["input_ids"])
            self._specials = _split_specials(with_specials, bare, list(tok("", add_special_tokens=True)["input_ids"]))
        return self._specials

    def encode_package_history(self, turns: Sequence[str]) -> list[int]:
        """compat mode: the package's text and right-side truncation at the tokenizer maximum."""
        text = package_history_text(turns, lookback=len(turns))
        return list(self.tokenizer(text, truncation=True)["input_ids"])

    # ---- scoring ---------------------------------------------------------------------------------

    def score(self, histories: Sequence[Sequence[str]], follow_ups: Sequence[str], *, batch_size: int = 16,
              max_tokens: int | None = None, progress: bool | None = None, tree: bool = True) -> np.ndarray:
        """``[len(histories), len(follow_ups)]`` mean per-token NLLs (nats).

        ``histories`` are already the turns to condition on (turn level: context + response); in compat mode
        the caller applies the package's 50-turn lookback (:func:`package_turns`). Causal models run histories
        as packed token trees, without a cache (:mod:`dialeval.full.tree`); with ``tree=False``, for int8 graphs,
        or on ONNX Runtime where no two histories share tokens, the cached route runs: a history whose tokens
        begin another's inside it, the common token prefix of histories with equal earlier turns once, and every
        history's follow-ups in one packed row sharing their common first tokens (:mod:`dialeval.full.hosted`).
        Both give the same NLLs to float rounding. Seq2seq models encode each history once and score every
        follow-up on its states. ``max_tokens`` caps the padded history tokens of a pass, shared-context packs
        and tree rows included.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"`batch_size` must be an int ≥ 1, got {batch_size!r}.")
        f_ids = self.encode_follow_ups(follow_ups)
        if self.kind == "seq2seq":
            budget = self.max_length
        else:
            budget = self.max_length - max(len(f) for f in f_ids)
            if budget < 8:
                raise ValueError(f"`max_length`={self.max_length} leaves no room for the history after the follow-ups.")
        if self.compat:
            items = [self.encode_package_history(h) for h in histories]
        else:
            items = [self.encode_history(h, budget) for h in histories]
        if self.kind == "causal":  # compat mode is seq2seq only (checked in __init__)
            nll = self._score_tree(items, f_ids, batch_size, max_tokens, progress) if tree else None
            if nll is not None:
                return nll
            keys = [tuple(h[:-1]) if len(h) > 1 else None for h in histories]
            return self._score_hosted(items, keys, f_ids, batch_size, max_tokens, progress)
        rows = run_batched(items, lambda batch: self._seq2seq_step(batch, f_ids), lengths=[len(ids) for ids in items],
                           batch_size=batch_size, max_tokens=max_tokens, desc="FULL follow-ups", progress=progress)
        return np.asarray(rows, dtype=np.float64).reshape(len(items), len(f_ids))

    def _score_tree(self, items: list[list[int]], f_ids: list[list[int]], batch_size: int, max_tokens: int | None,
                    progress: bool | None) -> np.ndarray | None:
        """The causal default: histories and follow-ups as token-tree rows (:func:`tree_followup_nll`); ``None``
        where the tree route does not apply, or on ONNX Runtime where no row holds two histories."""
        if not tree_route_applies(self.lm, items, f_ids):
            return None
        return tree_followup_nll(self.lm, items, f_ids, self.device, batch_size=batch_size, max_tokens=max_tokens,
                                 progress=progress)

    def _score_hosted(self, items: list[list[int]], keys: list[Any], f_ids: list[list[int]], batch_size: int,
                      max_tokens: int | None, progress: bool | None) -> np.ndarray:
        """The cached causal route (int8 graphs; histories that share nothing on ONNX Runtime): only host histories run
        (:func:`nested_hosts`), grouped by shared context; each host row then scores the follow-ups of every
        history it holds (:func:`hosted_followup_nll`)."""
        hosts = nested_hosts(items)
        guests: dict[int, list[int]] = {}
        for i, h in enumerate(hosts):
            guests.setdefault(h, []).append(i)
        roots = sorted(guests)
        found, alone = prefix_groups([items[i] for i in roots], [keys[i] for i in roots])
        groups = [(shared, [roots[m] for m in members]) for shared, members in found]
        rows: list[Any] = [None] * len(items)

        def follow_ups(hosted: list[int], cache: Any, attn: Any) -> list[int]:
            held = [[(len(items[g]), items[g][-1]) for g in guests[h]] for h in hosted]
            for h, per_guest in zip(hosted, hosted_followup_nll(self.lm, cache, attn, held, f_ids)):
                for g, nll in zip(guests[h], per_guest):
                    rows[g] = nll
            return hosted

        def shared(pack: list[tuple[int, list[int]]]) -> list[int]:
            _, cache, attn = shared_history_pass(self.lm, pack, items, pad_id(self.model), self.device)
            return follow_ups([i for _, members in pack for i in members], cache, attn)

        def single(batch: list[int]) -> list[int]:
            _, cache, attn = history_pass(self.lm, [items[i] for i in batch], pad_id(self.model), self.device)
            return follow_ups(batch, cache, attn)

        packs = pack_groups(groups, batch_size, max_tokens, [len(ids) for ids in items])
        run_batched(packs, lambda ps: [shared(p) for p in ps], lengths=[1] * len(packs), batch_size=1,
                    desc="FULL shared contexts", progress=progress if packs else False)
        singles = [roots[m] for m in alone]
        run_batched(singles, single, lengths=[len(items[i]) for i in singles], batch_size=batch_size,
                    max_tokens=max_tokens, desc="FULL follow-ups", progress=progress if singles else False,
                    call_cost=LM_CALL_COST)
        return np.asarray(rows, dtype=np.float64).reshape(len(items), len(f_ids))

    def _followup_tensors(self, f_ids: list[list[int]], pad_id: int) -> tuple[Any, Any]:
        import torch

        width = max(len(f) for f in f_ids)
        labels = torch.full((len(f_ids), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(f_ids), width), dtype=torch.bool)
        for k, f in enumerate(f_ids):
            labels[k, : len(f)] = torch.tensor(f)
            mask[k, : len(f)] = True
        return labels.to(self.device), mask.to(self.device)

    def _seq2seq_step(self, batch: list[list[int]], f_ids: list[list[int]]) -> list[list[float]]:
        """Encode the batch's histories once; run the decoder's start token once per item (computing the
        cross-attention keys/values), then every follow-up on a copy of that cache."""
        import torch
        from transformers.modeling_outputs import BaseModelOutput

        model, cfg = self.model, self.model.config
        pad = cfg.pad_token_id if cfg.pad_token_id is not None else 0
        n_items, n_f = len(batch), len(f_ids)
        width = max(len(h) for h in batch)
        input_ids = torch.full((n_items, width), pad, dtype=torch.long)
        attn = torch.zeros((n_items, width), dtype=torch.long)
        for b, h in enumerate(batch):
            input_ids[b, : len(h)] = torch.tensor(h)
            attn[b, : len(h)] = 1
        input_ids, attn = input_ids.to(self.device), attn.to(self.device)
        labels, lmask = self._followup_tensors(f_ids, pad)
        start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else pad
        onnx = getattr(self.lm, "onnx", None)  # ONNX Runtime (dialeval.models.onnx_lm.OnnxSeq2SeqLM) or torch
        if onnx is not None:
            return _onnx_seq2seq_nll(onnx, input_ids.numpy(), attn.numpy(), labels, lmask, start)
        hidden = model.get_encoder()(input_ids=input_ids, attention_mask=attn).last_hidden_state
        start_ids = torch.full((n_items, 1), start, dtype=torch.long, device=self.device)
        out = model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden), attention_mask=attn,
                    decoder_input_ids=start_ids, use_cache=True)
        total = torch.log_softmax(out.logits[:, -1].float(), dim=-1)[:, labels[:, 0]]  # log p(f_0 | h): [items, F]
        if labels.shape[1] > 1:
            cache = out.cache
            _repeat_cache(cache, n_f)
            # follow-ups are right-padded and the decoder is causal: padding never reaches a scored position
            out2 = model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden.repeat_interleave(n_f, dim=0)),
                         attention_mask=attn.repeat_interleave(n_f, dim=0), decoder_input_ids=labels[:, :-1].repeat(n_items, 1),
                         cache=cache, use_cache=True)
            logp = torch.log_softmax(out2.logits.float(), dim=-1)
            rest = logp.gather(-1, labels[:, 1:].repeat(n_items, 1).unsqueeze(-1)).squeeze(-1)
            total = total + (rest * lmask[:, 1:].repeat(n_items, 1)).sum(-1).view(n_items, n_f)
        return (-total / lmask.sum(-1).to(total.dtype)).double().cpu().tolist()


def _onnx_seq2seq_nll(onnx: Any, input_ids: np.ndarray, attn: np.ndarray, labels: Any, lmask: Any,
                      start: int) -> list[list[float]]:
    """Mean NLL of every follow-up (right-padded ``labels``) after every history, on ONNX Runtime: encode the
    histories once, then decode ``[start] + follow-up[:-1]`` teacher-forced against each history's states (the
    decoder is causal, so right padding never reaches a scored position)."""
    import torch

    n_items, n_f = input_ids.shape[0], labels.shape[0]
    states = onnx.encode(input_ids, attn)
    dec_in = torch.cat([torch.full((n_f, 1), start, dtype=torch.long), labels[:, :-1]], 1).repeat(n_items, 1)
    logits = torch.from_numpy(onnx.decode(dec_in.numpy(), np.repeat(states, n_f, axis=0), np.repeat(attn, n_f, axis=0)))
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, labels.repeat(n_items, 1).unsqueeze(-1)).squeeze(-1)
    total = (logp * lmask.repeat(n_items, 1)).sum(-1).view(n_items, n_f)
    return (-total / lmask.sum(-1).to(total.dtype)).double().cpu().tolist()


def _split_specials(with_specials: list[int], bare: list[int], specials_only: list[int]) -> tuple[list[int], list[int]]:
    """Split the special tokens a tokenizer adds around ``bare`` into (prefix, suffix)."""
    n = len(bare)
    for i in range(len(with_specials) - n + 1):
        if with_specials[i:i + n] == bare:
            return with_specials[:i], with_specials[i + n:]
    return [], list(specials_only)


def _repeat_cache(cache: Any, repeats: int) -> None:
    """Repeat every batch row of a transformers KV cache ``repeats`` times in place (row b → b*repeats…)."""
    if hasattr(cache, "batch_repeat_interleave"):
        cache.batch_repeat_interleave(repeats)
        return
    raise RuntimeError(f"cannot share the key/value cache of type {type(cache).__name__} across follow-ups.")


def _compat_tokenizer(lm: Any) -> Any:
    """The tokenizer as ``full`` 0.0.3.1 loads it: ``add_prefix_space=True, truncation_side="right"``.
    Kept on the loaded LM, so it lives exactly as long as the LM's entry in the model cache."""
    tok = getattr(lm, "compat_tokenizer", None)
    if tok is None:
        from transformers import AutoTokenizer

        tok = load_pretrained(AutoTokenizer, lm.path, what="tokenizer", add_prefix_space=True,
                              truncation_side="right")
        lm.compat_tokenizer = tok
    return tok


# --------------------------------------------------------------------------------------------------
# End-to-end
# --------------------------------------------------------------------------------------------------

def full_scores(histories: list[list[str]], *, level: str, lm: Any, follow_ups: Sequence[str] | None = None,
                compat: str | None = None, separator: str | None = None, max_length: int | None = None,
                lookback: int = PACKAGE_LOOKBACK, batch_size: int = 16, max_tokens: int | None = None,
                progress: bool | None = None, follow_up_prefix: str = "", chat_template: bool = False,
                aggregation: str | None = None, tree: bool = True) -> dict[str, Any]:
    """Score validated histories (turn level: context turns + response) and aggregate.

    Returns ``scores`` (one per item), ``follow_up_scores`` (per item, per follow-up: NLL, or perplexity
    in compat mode), ``follow_ups``, the mean ``full_followup`` and the text settings that ran
    (``max_length``, ``separator``, ``aggregation``). ``aggregation="sum"`` scores each follow-up by its total
    NLL instead of the per-token mean (default mode only); ``None`` options take the model kind's default
    (:data:`dialeval.full.formulation.DEFAULT_FORMULATION`).
    """
    if aggregation is None:
        aggregation = default_formulation(lm.kind, compat, getattr(lm, "offline", None))["aggregation"]
    fus = check_follow_ups(follow_ups) if follow_ups is not None else (FULL_0_0_3_FOLLOW_UPS if compat else FOLLOW_UPS)
    if aggregation not in AGGREGATIONS or (compat and aggregation != "mean"):
        raise ValueError(f"`aggregation`={aggregation!r}: use one of {AGGREGATIONS} (compat mode: 'mean').")
    scorer = FollowupScorer(lm, separator=separator, max_length=max_length, compat=compat, lookback=lookback,
                            follow_up_prefix=follow_up_prefix, chat_template=chat_template)
    if compat:
        # the package keeps `lookback` context turns plus the response (turn level) or `lookback` turns (dialog)
        histories = [package_turns(h[:-1], h[-1], lookback) if level == "turn" else package_turns(h, None, lookback)
                     for h in histories]
    nll = scorer.score(histories, fus, batch_size=batch_size, max_tokens=max_tokens, progress=progress, tree=tree)
    if not compat:
        nll = followup_nll(nll, [len(f) for f in scorer.encode_follow_ups(fus)], aggregation)
    values = followup_values(nll, compat)
    scores = aggregate_followups(values)
    return {
        "full_followup": float(np.mean(scores)),
        "scores": scores.tolist(),
        "follow_up_scores": values.tolist(),
        "follow_ups": list(fus),
        "max_length": scorer.max_length,
        "separator": scorer.separator,
        "aggregation": aggregation,
    }
