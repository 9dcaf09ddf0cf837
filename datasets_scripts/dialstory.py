"""DialStory (Yao et al., 2022): dialogue in Chinese stories, two tasks.

- ``dialgen`` (masked dialogue generation): ``{id, story, targets, characters}``; ``story`` holds
  placeholders ``[MASK1]``…``[MASKn]`` (in order, each once) and ``targets`` the n masked turns in order.
- ``dialspk`` (speaker recognition): ``{id, story, candidates, speakers}``; ``story`` has one ``[MASK]``
  right before each specified dialogue turn and ``speakers`` the gold speaker of each, all among
  ``candidates`` (the story's character names).

No public copy exists, so files are JSON Lines under ``<data_dir>/<config>/<split>.jsonl`` (split = train,
validation or test). :func:`make_dialgen` builds DialGen examples from raw stories by the paper's rules:
dialogue turns are the spans inside quotation marks (“…”, 「…」, "…"); a story has at least 10 turns and its
turns hold 30–50 % of its tokens (:func:`dialogue_share`; characters for Chinese text, whitespace words
otherwise, quotation marks and whitespace not counted); 30% of the turns are masked at random (seeded per
story); no masked turn lies inside the first 50 or the last 30 tokens; the masked story still mentions at
least five characters (found by :func:`dialeval.datasets.dialstory_characters.find_characters`, by jieba
person tags alone, or given — given names must occur in the text). Every drop is counted by rule;
:func:`make_dialspk` adds the automatic speaker annotation (DialSpk training data).

Mask convention (shared with the ``dialgen`` metric and :func:`fill_masks`): a placeholder replaces the text
*inside* the quotation marks (``“[MASK1]”``); literal ``[MASK`` in the story text is escaped as ``[[MASK``
(:func:`escape_mask_text`), so it is never read as a placeholder and :func:`fill_masks` restores it.
"""

from __future__ import annotations

import logging
import math
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import datasets

from dialeval.datasets._common import STRINGS, resolve_data_dir
from dialeval.io.readers import (
    MalformedDataError,
    read_jsonl,
    require_keys,
    require_str,
    require_str_list,
    where,
)

CITATION = """@article{yao-etal-2022-dialstory,
  title = {A Benchmark for Understanding and Generating Dialogue between Characters in Stories},
  author = {Yao, Jianzhu and Liu, Ziqi and Guan, Jian and Huang, Minlie},
  journal = {arXiv preprint arXiv:2209.08524}, year = {2022}}
"""

SPLITS = ("train", "validation", "test")
FEATURES = {
    "dialgen": datasets.Features({
        "id": datasets.Value("string"), "story": datasets.Value("string"),
        "targets": STRINGS, "characters": STRINGS,
    }),
    "dialspk": datasets.Features({
        "id": datasets.Value("string"), "story": datasets.Value("string"),
        "candidates": STRINGS, "speakers": STRINGS,
    }),
}

#: The text inside a pair of quotation marks (no line breaks, not empty).
QUOTED = re.compile(r"“([^“”\n]+)”|「([^「」\n]+)」|\"([^\"\n]+)\"")
#: A DialGen placeholder; ``[[MASK`` is escaped story text, not a placeholder.
NUMBERED_MASK = re.compile(r"(?<!\[)\[MASK(\d+)\]")
SPEAKER_MASK = "[MASK]"
SPEAKER_MASK_RE = re.compile(r"(?<!\[)\[MASK\]")
MASK_TEXT, ESCAPED_MASK_TEXT = "[MASK", "[[MASK"
#: jieba.posseg tags for person names (Chinese, transliterated, Japanese).
PERSON_TAGS = ("nr", "nrt", "nrfg")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def dialogue_turns(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character offsets of each dialogue turn: the text inside “…”, 「…」 or "…"."""
    spans = []
    for m in QUOTED.finditer(text):
        group = next(g for g in (1, 2, 3) if m.group(g) is not None)
        spans.append((m.start(group), m.end(group)))
    return spans


def token_offsets(text: str, unit: str = "auto") -> tuple[str, list[int]]:
    """The position unit (``char`` for text containing CJK characters, else ``word``) and, for ``word``,
    the number of whitespace tokens that start before each character offset."""
    if unit == "auto":
        unit = "char" if _CJK.search(text) else "word"
    if unit not in {"char", "word"}:
        raise ValueError(f"unit={unit!r} is not known; use 'char', 'word' or 'auto'.")
    if unit == "char":
        return unit, []
    counts, n, prev_space = [], 0, True
    for ch in text:
        counts.append(n)
        if not ch.isspace() and prev_space:
            n += 1
        prev_space = ch.isspace()
    counts.append(n)
    return unit, counts


def dialogue_share(text: str, spans: Sequence[tuple[int, int]] | None = None, unit: str = "auto") -> float:
    """Share of the story's tokens inside dialogue turns: non-whitespace characters for CJK text (``char``),
    whitespace words otherwise; the quotation marks themselves are not tokens of either side."""
    spans = dialogue_turns(text) if spans is None else spans
    unit, _ = token_offsets(text, unit)
    marks = set("“”「」\"")
    if unit == "char":
        inside = sum(sum(not c.isspace() for c in text[s:e]) for s, e in spans)
        total = sum(not c.isspace() and c not in marks for c in text)
    else:
        inside = sum(len(text[s:e].split()) for s, e in spans)
        total = len("".join(" " if c in marks else c for c in text).split())
    return inside / total if total else 0.0


def maskable_turns(text: str, spans: Sequence[tuple[int, int]], head: int = 50, tail: int = 30,
                   unit: str = "auto") -> list[int]:
    """Indices of turns lying wholly after the first ``head`` and before the last ``tail`` units."""
    unit, counts = token_offsets(text, unit)
    if unit == "char":
        total = len(text)
        return [i for i, (s, e) in enumerate(spans) if s >= head and total - e >= tail]
    total = counts[-1]
    # the quotation marks (at s - 1 and e) belong to the turn: tokens before = tokens started before the
    # opening mark; tokens after = tokens started after the closing mark
    return [i for i, (s, e) in enumerate(spans)
            if counts[max(s - 1, 0)] >= head and total - counts[min(e + 1, len(text))] >= tail]


def number_to_mask(num_turns: int, ratio: float) -> int:
    """``round(ratio · turns)`` with halves rounded up, at least 1."""
    return max(1, math.floor(ratio * num_turns + 0.5))


def escape_mask_text(text: str) -> str:
    """Literal ``[MASK`` in story text → ``[[MASK`` (never read as a placeholder; undone by
    :func:`unescape_mask_text`)."""
    return text.replace(MASK_TEXT, ESCAPED_MASK_TEXT)


def unescape_mask_text(text: str) -> str:
    """Inverse of :func:`escape_mask_text`."""
    return text.replace(ESCAPED_MASK_TEXT, MASK_TEXT)


def mask_turns(text: str, spans: Sequence[tuple[int, int]], chosen: Iterable[int]) -> tuple[str, list[str]]:
    """Replace the chosen turns by ``[MASK1]``…``[MASKn]`` in text order (the story text around them
    escaped by :func:`escape_mask_text`); return the story and the targets (original text)."""
    chosen = sorted(set(chosen))
    pieces, targets, pos = [], [], 0
    for k, i in enumerate(chosen, 1):
        s, e = spans[i]
        pieces += [escape_mask_text(text[pos:s]), f"[MASK{k}]"]
        targets.append(text[s:e])
        pos = e
    pieces.append(escape_mask_text(text[pos:]))
    return "".join(pieces), targets


def fill_masks(story: str, turns: Sequence[str]) -> str:
    """The story with ``[MASKk]`` replaced by ``turns[k-1]`` and escaped text restored: the inverse of
    :func:`mask_turns` (``fill_masks(*mask_turns(text, spans, chosen)) == text``)."""
    pieces = NUMBERED_MASK.split(story)  # text, number, text, number, …, text
    numbers = [int(x) for x in pieces[1::2]]
    if numbers != list(range(1, len(turns) + 1)):
        raise ValueError(f"story has placeholders {[f'[MASK{k}]' for k in numbers]} but {len(turns)} turn(s) "
                         f"were given; pass one turn per placeholder [MASK1]…[MASK{len(turns)}], in order.")
    out = [unescape_mask_text(pieces[0])]
    for turn, text in zip(turns, pieces[2::2]):
        out += [turn, unescape_mask_text(text)]
    return "".join(out)


def identify_characters(text: str, *, min_mentions: int = 2, min_length: int = 2) -> list[str]:
    """A story's characters: distinct person names by ``jieba.posseg`` (tags nr/nrt/nrfg, HMM on), kept
    when they have ≥ ``min_length`` CJK characters and are tagged ≥ ``min_mentions`` times; in order of
    first mention. The filters drop jieba's one-off false positives (“阳光”, “谢谢”)."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    counts: dict[str, int] = {}
    for pair in jieba.posseg.cut(text):
        word = pair.word
        if pair.flag in PERSON_TAGS and len(word) >= min_length and all(_CJK.match(c) for c in word):
            counts[word] = counts.get(word, 0) + 1
    return [w for w, c in counts.items() if c >= min_mentions]


def rule_reasons(*, mask_ratio: float = 0.3, head: int = 50, tail: int = 30, min_turns: int = 10,
                 min_characters: int = 5, min_share: float = 0.3, max_share: float = 0.5) -> dict[str, str]:
    """The drop reason of each construction rule, in the order the rules are checked."""
    return {
        "mask_text": f"contains the mask text {MASK_TEXT} (mask_text='skip')",
        "min_turns": f"fewer than {min_turns} dialogue turns",
        "dialogue_share": f"dialogue outside {min_share:.0%}–{max_share:.0%} of the story's tokens",
        "min_characters": f"fewer than {min_characters} characters (person names)",
        "head_tail": f"fewer than {mask_ratio:.0%} of the turns outside the first {head} / last {tail} tokens",
        "masked_characters": f"fewer than {min_characters} characters left in the masked story",
    }


def story_characters(text: str, characters: Sequence[str] | None, finder: str = "finder") -> list[str]:
    """The story's characters: ``characters`` when given (only names that occur in ``text``), else found by
    ``finder`` (``"finder"``: :func:`dialeval.datasets.dialstory_characters.find_characters`; ``"jieba"``:
    :func:`identify_characters`)."""
    if characters is not None:
        return [c for c in dict.fromkeys(characters) if c and c in text]
    if finder == "jieba":
        return identify_characters(text)
    from dialeval.datasets.dialstory_characters import find_characters

    return find_characters(text)


def make_dialgen_example(story_id: str, text: str, characters: Sequence[str] | None = None, *, seed: int = 0,
                         mask_ratio: float = 0.3, head: int = 50, tail: int = 30, min_turns: int = 10,
                         min_characters: int = 5, min_share: float = 0.3, max_share: float = 0.5,
                         unit: str = "auto", mask_text: str = "escape",
                         finder: str = "finder") -> tuple[dict[str, Any] | None, str | None]:
    """One DialGen example from a raw story, or ``(None, reason)`` for the first rule it breaks.

    ``characters=None`` finds them with ``finder`` (:func:`story_characters`); given names that do not
    occur in the story do not count. ``mask_text`` is ``"escape"`` (literal ``[MASK`` kept as ``[[MASK``)
    or ``"skip"``. Exactly ``round(mask_ratio · turns)`` turns are masked, all outside the protected
    head/tail, and at least ``min_characters`` characters must still be named in the masked story (the
    example's ``characters`` are those). The random choice is seeded by ``f"{seed}:{story_id}"``.
    """
    if not 0 < mask_ratio <= 1:
        raise ValueError(f"mask_ratio must be in (0, 1], got {mask_ratio}.")
    if not 0 <= min_share <= max_share <= 1:
        raise ValueError(f"need 0 ≤ min_share ≤ max_share ≤ 1, got min_share={min_share}, max_share={max_share}.")
    if mask_text not in {"escape", "skip"}:
        raise ValueError(f"mask_text={mask_text!r} is not known; use 'escape' or 'skip'.")
    reasons = rule_reasons(mask_ratio=mask_ratio, head=head, tail=tail, min_turns=min_turns,
                           min_characters=min_characters, min_share=min_share, max_share=max_share)
    if mask_text == "skip" and MASK_TEXT in text:
        return None, reasons["mask_text"]
    spans = dialogue_turns(text)
    if len(spans) < min_turns:
        return None, reasons["min_turns"]
    if not min_share <= dialogue_share(text, spans, unit) <= max_share:
        return None, reasons["dialogue_share"]
    characters = story_characters(text, characters, finder)
    if len(characters) < min_characters:
        return None, reasons["min_characters"]
    eligible = maskable_turns(text, spans, head, tail, unit)
    k = number_to_mask(len(spans), mask_ratio)
    if len(eligible) < k:
        return None, reasons["head_tail"]
    chosen = random.Random(f"{seed}:{story_id}").sample(eligible, k)
    story, targets = mask_turns(text, spans, chosen)
    visible = [c for c in characters if c in story]
    if len(visible) < min_characters:
        return None, reasons["masked_characters"]
    return {"id": story_id, "story": story, "targets": targets, "characters": visible}, None


RULE_OPTIONS = ("mask_ratio", "head", "tail", "min_turns", "min_characters", "min_share", "max_share")


def make_dialgen(stories: Iterable[dict[str, Any]], *, characters: str = "finder",
                 **kwargs: Any) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """DialGen examples from ``{"id", "story", "characters"?}`` records, and how many stories each rule
    dropped (every rule listed, 0 included). ``characters``: ``"finder"`` (rules over jieba, the default),
    ``"jieba"`` (jieba person tags only) or ``"given"`` (the records' lists, names absent from the text
    dropped)."""
    if characters not in {"finder", "jieba", "given"}:
        raise ValueError(f"characters={characters!r} is not known; use 'finder', 'jieba' or 'given'.")
    reasons = rule_reasons(**{k: kwargs[k] for k in RULE_OPTIONS if k in kwargs})
    if kwargs.get("mask_text", "escape") != "skip":
        del reasons["mask_text"]
    out, skipped = [], dict.fromkeys(reasons.values(), 0)
    for rec in stories:
        given = list(rec.get("characters") or []) if characters == "given" else None
        finder = "jieba" if characters == "jieba" else "finder"
        ex, reason = make_dialgen_example(str(rec["id"]), rec["story"], given, finder=finder, **kwargs)
        if ex is None:
            skipped[reason] += 1
        else:
            out.append(ex)
    return out, skipped


def make_dialspk(stories: Iterable[dict[str, Any]], *, characters: str = "finder",
                 min_characters: int = 2) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """DialSpk-style training data by automatic speaker annotation (the nearest subject before or after each
    quoted turn, :func:`dialeval.datasets.dialstory_characters.annotate_speakers`): one example per story
    with ``[MASK]`` before every turn that got a speaker; drop counts by reason."""
    from dialeval.datasets.dialstory_characters import annotate_speakers, dialspk_record

    reasons = {"chars": f"fewer than {min_characters} characters", "none": "no turn with a found speaker"}
    out, skipped = [], dict.fromkeys(reasons.values(), 0)
    for rec in stories:
        given = list(rec.get("characters") or []) if characters == "given" else None
        names = story_characters(rec["story"], given, "jieba" if characters == "jieba" else "finder")
        if len(names) < min_characters:
            skipped[reasons["chars"]] += 1
            continue
        ex = dialspk_record(str(rec["id"]), rec["story"], names, annotate_speakers(rec["story"], names))
        if ex is None:
            skipped[reasons["none"]] += 1
        else:
            out.append(ex)
    return out, skipped


def insert_speaker_masks(text: str, turn_indices: Iterable[int]) -> str:
    """A DialSpk story: ``[MASK]`` inserted right before the opening quote of each given turn."""
    spans = dialogue_turns(text)
    out, pos = [], 0
    for i in sorted(set(turn_indices)):
        s = spans[i][0] - 1  # the opening quotation mark
        out += [text[pos:s], SPEAKER_MASK]
        pos = s
    out.append(text[pos:])
    return "".join(out)


def read_raw_stories(path: str | Path) -> list[dict[str, Any]]:
    """Raw stories for :func:`make_dialgen`: a JSON Lines file of ``{"id", "story", "characters"?}`` or a
    folder of ``.txt`` files (id = file name without suffix)."""
    p = Path(path)
    if p.is_dir():
        files = sorted(p.glob("*.txt"))
        if not files:
            raise FileNotFoundError(f"{p}: no .txt stories in this folder.")
        return [{"id": f.stem, "story": f.read_text(encoding="utf-8"), "characters": []} for f in files]
    if not p.is_file():
        raise FileNotFoundError(f"raw stories {str(p)!r} do not exist.")
    rows = []
    seen: dict[str, str] = {}
    for lineno, obj in read_jsonl(p):
        loc = where(p, lineno)
        require_keys(obj, ("id", "story"), loc)
        if str(obj["id"]) in seen:  # each id is written once: a repeat would be scored twice
            raise MalformedDataError(f"{loc}: id {str(obj['id'])!r} repeats {seen[str(obj['id'])]}; give each story "
                                     "its own id.")
        seen[str(obj["id"])] = f"line {lineno}"
        rows.append({"id": str(obj["id"]), "story": require_str(obj["story"], "story", loc),
                     "characters": require_str_list(obj.get("characters", []), "characters", loc)})
    if not rows:
        raise MalformedDataError(f"{p}: no stories (the file is empty); write one {{\"id\", \"story\"}} object per line.")
    return rows


def check_dialgen(obj: dict[str, Any], loc: str) -> dict[str, Any]:
    """Validate a DialGen record: placeholders [MASK1]…[MASKn] in order, one target each."""
    require_keys(obj, ("id", "story", "targets"), loc)
    story = require_str(obj["story"], "story", loc)
    targets = require_str_list(obj["targets"], "targets", loc, min_len=1)
    found = [int(m) for m in NUMBERED_MASK.findall(story)]
    if found != list(range(1, len(targets) + 1)):
        raise MalformedDataError(f"{loc}: story has placeholders {[f'[MASK{k}]' for k in found]} but "
                                 f"{len(targets)} target(s); expected [MASK1]…[MASK{len(targets)}] in order, once each.")
    return {"id": str(obj["id"]), "story": story, "targets": targets,
            "characters": require_str_list(obj.get("characters", []), "characters", loc)}


def check_dialspk(obj: dict[str, Any], loc: str) -> dict[str, Any]:
    """Validate a DialSpk record: one gold speaker per ``[MASK]``, each among the candidates."""
    require_keys(obj, ("id", "story", "candidates", "speakers"), loc)
    story = require_str(obj["story"], "story", loc)
    candidates = require_str_list(obj["candidates"], "candidates", loc, min_len=1)
    speakers = require_str_list(obj["speakers"], "speakers", loc, min_len=1)
    n_masks = len(SPEAKER_MASK_RE.findall(story))
    if n_masks != len(speakers):
        raise MalformedDataError(f"{loc}: story has {n_masks} [MASK] but {len(speakers)} speaker(s); "
                                 "give one gold speaker per [MASK].")
    outside = [s for s in speakers if s not in candidates]
    if outside:
        raise MalformedDataError(f"{loc}: speaker {outside[0]!r} is not among the candidates {candidates}.")
    return {"id": str(obj["id"]), "story": story, "candidates": candidates, "speakers": speakers}


CHECKS = {"dialgen": check_dialgen, "dialspk": check_dialspk}


class DialStoryBuilder(datasets.GeneratorBasedBuilder):
    """DialStory builder; ``data_dir`` holds ``dialgen/<split>.jsonl`` and/or ``dialspk/<split>.jsonl``
    (``datasets_scripts/cards/dialstory/sample``, package data of ``dialeval.datasets`` is a small hand-written example)."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIGS = [
        datasets.BuilderConfig(name="dialgen", version=VERSION, description="masked dialogue generation"),
        datasets.BuilderConfig(name="dialspk", version=VERSION, description="dialogue speaker recognition"),
    ]
    DEFAULT_CONFIG_NAME = "dialgen"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="DialStory: dialogue generation (DialGen) and speaker recognition (DialSpk) in Chinese stories.",
            features=FEATURES[self.config.name], citation=CITATION,
            homepage="https://arxiv.org/abs/2209.08524", license="unknown",
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        root = resolve_data_dir(self.config.data_dir, "dialstory") / self.config.name
        files = {s: root / f"{s}.jsonl" for s in SPLITS if (root / f"{s}.jsonl").is_file()}
        if not files:
            raise FileNotFoundError(f"no {self.config.name} split under {str(root)!r}: expected "
                                    f"{', '.join(s + '.jsonl' for s in SPLITS)}.")
        return [datasets.SplitGenerator(name=s, gen_kwargs={"path": p}) for s, p in files.items()]

    def _generate_examples(self, path: Path) -> Any:
        check = CHECKS[self.config.name]
        for lineno, obj in read_jsonl(path):
            yield lineno, check(obj, where(path, lineno))
