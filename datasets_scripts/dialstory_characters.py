"""Offline character finding and speaker annotation for DialStory-style Chinese stories (Yao et al. 2022, §3).

The paper finds characters with a pretrained NER model and labels each turn's speaker by "recognizing the
subjects" around it. Neither model is public, so this module does both with rules over jieba (offline):

- :func:`find_characters` combines five kinds of evidence: jieba person tags (``nr``/``nrt``/``nrfg``);
  surname + kinship or title (张婶, 李叔, 王老师); 小/老/阿 + name (小红, 老王, 阿强); role titles (村长, 医生,
  国王); and the subject of a clause that leads into or follows a quote with a speech verb (``X说：“…”``,
  ``“…”X说``). A name pattern (surname + kinship/title, 小/老/阿 + name) is kept from a single mention in the
  narration, as the paper counts every distinct name its NER finds (a name met only inside quotes is often a
  vocative alias, 王爷爷 for 老王); other candidates are kept when they are the subject of a speech at least once
  or are mentioned at least ``min_mentions`` times (person tags: tagged that often; jieba's single person tags
  are too noisy to count alone: 金黄, 张开), unless a candidate only ever occurs inside a longer kept
  name (小雨 in 林小雨) or is a bare title that a kept name ends with (老师 beside 李老师).
- :func:`annotate_speakers` gives each quoted turn the nearest subject: the first character named in the
  clause (else the sentence) that leads into the quote; a leading 他/她 is resolved to the latest character
  named in the narration before it; with no lead-in, the subject of a speech clause right after the quote,
  or the name that opens an action beat right after it (“…”小明笑了。). Turns with no subject stay
  unlabelled (``None``).
- :func:`dialspk_record` turns the annotation into a DialSpk example (``[MASK]`` before each labelled turn).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from dialeval.datasets.dialstory import (
    PERSON_TAGS,
    dialogue_turns,
    escape_mask_text,
    insert_speaker_masks,
)

SURNAMES = ("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈"
            "姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤牛")
#: Kinship terms and titles that follow a surname (longest first, so 大爷 wins over 爷).
KINSHIP = ("老太太", "老爷爷", "老奶奶", "大爷", "大娘", "大妈", "大婶", "婶子", "婶婶", "大叔", "叔叔", "大伯", "伯伯",
           "阿姨", "大姨", "大姐", "姐姐", "大哥", "哥哥", "嫂子", "大嫂", "奶奶", "爷爷", "老汉", "老师", "师傅", "大夫",
           "医生", "阿婆", "婆婆", "姑姑", "舅舅", "老板", "经理", "主任", "队长", "村长", "婶", "叔", "伯", "姨", "哥",
           "姐", "嫂", "总", "工")
#: Role titles that name a character on their own.
ROLES = ("村长", "队长", "支书", "书记", "校长", "老师", "医生", "大夫", "护士", "御医", "厂长", "班长", "站长", "主任",
         "局长", "县长", "镇长", "乡长", "市长", "经理", "老板", "掌柜", "店主", "店员", "国王", "王后", "皇帝", "公主",
         "王子", "将军", "警察", "司机", "船长", "猎人", "渔夫", "樵夫", "巫婆", "仙女", "和尚", "道士", "师父",
         "老太太", "老爷爷", "老奶奶", "妈妈", "爸爸", "奶奶", "爷爷", "外婆", "外公", "姥姥", "姥爷")
#: Second characters after 小 that make ordinary words (小心, 小时, 小狗 …), not names.
_XIAO_STOP = set("心时孩声路狗猫鸟河屋村镇伙姑朋家事说学麦手脸脚嘴姐树草山院店子的了小块碗桥船车包门溪兔熊羊鸡鸭"
                 "猪马牛虫鱼部分型些点会儿孙辈组区城吃菜米气品吧道便看跑步心姨叔妹弟哥声")
_ADDRESS_STOP = set("姨婆公哥姐妈爸们")  # 阿姨, 阿婆 … are kinship words, not 阿 + name
PRONOUNS = ("他们", "她们", "我们", "你们", "大家", "自己", "别人", "有人", "人们", "对方", "众人", "他", "她", "我",
            "你", "它", "谁")
SPEECH_VERBS = re.compile(r"(说道|问道|喊道|答道|笑道|叫道|嚷道|骂道|叹道|说|问|喊|叫|答|回答|嚷|骂|吼|嘟囔|告诉|解释|"
                          r"补充|插嘴|开口|提醒|打气|鼓励|回应|叹了口气|大叫|大喝一声)")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_SENTENCE_END = "。！？!?\n…"
_CLAUSE_END = _SENTENCE_END + "，,；;：:、"
_LEAD_ADVERB = re.compile(r"^(?:这时|那时|忽然|突然|然后|接着|于是)+")
_PLACE_SUFFIX = tuple("林村镇山河湖城县市路街园店楼院庄桥")
#: Kinship nouns jieba sometimes tags as names (孙子 "grandson"): never a character name on their own.
NOT_NAMES = {"孙子", "儿子", "女儿", "孙女", "丈夫", "妻子", "老婆", "老公", "孩子", "同学", "朋友", "邻居"}
#: Words before a name in apposition (班长周洁, 店员韩梅, 同桌赵磊).
APPOSITION = ROLES + ("同桌", "邻居", "同学", "朋友", "表哥", "表姐", "哥哥", "姐姐", "弟弟", "妹妹", "儿子", "女儿",
                      "孙子", "孙女")
#: Reduplicated words that are not pet names (妈妈, 慢慢 …).
_REDUP_STOP = set("妈爸哥姐弟妹奶爷叔婶姨舅宝刚慢渐常天好轻静悄偷紧高大小点看想试走说笑谢个人处星往明白默暗纷"
                  "匆乖偏早晚多少快远近深浅满整")


def _jieba_pairs(text: str) -> list[tuple[str, str]]:
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return [(p.word, p.flag) for p in jieba.posseg.cut(text)]


def _narration(text: str) -> str:
    """``text`` with the inside of every quoted turn blanked (same length, offsets unchanged)."""
    chars = list(text)
    for s, e in dialogue_turns(text):
        chars[s:e] = " " * (e - s)
    return "".join(chars)


def _pattern_candidates(text: str) -> tuple[set[str], set[str]]:
    """Name-shaped strings in ``text``: strong ones (surname + kinship/title, 老 + surname, surname + 小X,
    小/阿 + one-character name, role titles) and weak ones (clause-initial reduplications such as 亮亮)."""
    kin = "|".join(sorted(KINSHIP, key=len, reverse=True))
    cjk = "\u4e00-\u9fff"
    strong = {m.group(0) for m in re.finditer(f"[{SURNAMES}](?:{kin})", text)}
    strong |= {m.group(0) for m in re.finditer(f"老[{SURNAMES}]", text)}
    strong |= {m.group(0) for m in re.finditer(f"[{SURNAMES}]小[{cjk}]", text) if m.group(0)[2] not in _XIAO_STOP}
    strong |= {m.group(0) for m in re.finditer(f"小([{cjk}])", text) if m.group(1) not in _XIAO_STOP}
    strong |= {m.group(0) for m in re.finditer(f"阿([{cjk}])", text) if m.group(1) not in _ADDRESS_STOP}
    strong |= {r for r in ROLES if r in text}
    weak = {m.group(1) for m in re.finditer(f"(?:^|[，。！？：；、\\s”」])(([{cjk}])\\2)", text)
            if m.group(2) not in _REDUP_STOP}
    return strong, weak - strong


def _lead_clause(narr: str, start: int, bounds: str) -> tuple[int, str]:
    """The narration before offset ``start`` back to the previous boundary in ``bounds`` or quote."""
    end = start
    while end > 0 and narr[end - 1] in "：:，, ":
        end -= 1
    i = end
    while i > 0 and narr[i - 1] not in bounds and narr[i - 1] not in "“”「」\"":
        i -= 1
    return i, narr[i:end]


def _trail_clause(narr: str, end: int) -> str:
    """The narration after a closing quote up to the next clause boundary or quote."""
    j = end
    while j < len(narr) and narr[j] not in _CLAUSE_END and narr[j] not in "“”「」\"":
        j += 1
    return narr[end:j]


def _leading_word(clause: str) -> str | None:
    """jieba's first word of a speech clause when it looks like a name: a noun of 2–4 CJK characters, not a
    pronoun, not an adverbial (followed by 地/得)."""
    clause = clause.strip()
    if not clause or not SPEECH_VERBS.search(clause):
        return None
    pairs = [(w, f) for w, f in _jieba_pairs(clause) if w.strip()]
    if not pairs:
        return None
    word, flag = pairs[0]
    rest = clause[len(word):]
    if (word in PRONOUNS or word in NOT_NAMES or not flag.startswith("n") or not 2 <= len(word) <= 4
            or not _CJK_RUN.fullmatch(word) or rest[:1] in ("地", "得")):
        return None
    return word


def turn_subject(narr: str, span: tuple[int, int], names: Sequence[str], guess: bool = False) -> str | None:
    """The nearest subject of the quoted turn at ``span`` among ``names`` (see :func:`annotate_speakers`);
    with ``guess``, jieba's leading noun of a speech clause when no name is found there."""
    s, e = span
    start, clause = _lead_clause(narr, s - 1, _CLAUSE_END)
    if clause.strip():
        if _starts_with_pronoun(clause):
            return _resolve_pronoun(narr, start, names)
        who = _first_mention(clause, names) or (_leading_word(clause) if guess else None)
        if who is None:
            _, sentence = _lead_clause(narr, s - 1, _SENTENCE_END)
            who = _first_mention(sentence, names)
        return who
    trail = _trail_clause(narr, e + 1)
    if not SPEECH_VERBS.search(trail):
        # an action beat right after the quote (“…”小明笑了。) names the speaker when it opens the clause
        who = _first_mention(trail, names)
        return who if who is not None and trail.lstrip().startswith(who) else None
    if _starts_with_pronoun(trail):
        return _resolve_pronoun(narr, s - 1, names)
    return _first_mention(trail, names) or (_leading_word(trail) if guess else None)


def _speech_subjects(text: str, narr: str, known: set[str]) -> dict[str, int]:
    """How often each candidate (or a guessed leading noun) is the subject of a quoted turn."""
    counts: dict[str, int] = {}
    names = sorted(known)
    for span in dialogue_turns(text):
        who = turn_subject(narr, span, names, guess=True)
        if who:
            counts[who] = counts.get(who, 0) + 1
    return counts


def _first_mention(clause: str, names: set[str] | Sequence[str]) -> str | None:
    """The name that occurs first in ``clause`` (longest on ties), or ``None``."""
    best: tuple[int, int, str] | None = None
    for name in names:
        pos = clause.find(name)
        if pos >= 0 and (best is None or (pos, -len(name)) < best[:2]):
            best = (pos, -len(name), name)
    return best[2] if best else None


def _only_inside_longer(name: str, kept: set[str], text: str) -> bool:
    """Whether every occurrence of ``name`` lies inside an occurrence of a longer kept candidate."""
    longer = [k for k in kept if k != name and name in k]
    if not longer:
        return False
    covered = set()
    for k in longer:
        for m in re.finditer(re.escape(k), text):
            covered.update(range(m.start(), m.end()))
    return all(set(range(m.start(), m.end())) <= covered for m in re.finditer(re.escape(name), text))


def _tagged_names(text: str) -> dict[str, int]:
    """jieba person-tag counts of CJK words of ≥ 2 characters, and which were tagged in apposition."""
    counts: dict[str, int] = {}
    pairs = _jieba_pairs(text)
    for k, (word, flag) in enumerate(pairs):
        if flag in PERSON_TAGS and len(word) >= 2 and _CJK_RUN.fullmatch(word) and word not in NOT_NAMES:
            weight = 2 if k and pairs[k - 1][0] in APPOSITION else 1  # 班长周洁: a name for sure
            counts[word] = counts.get(word, 0) + weight
    return counts


def find_characters(text: str, *, min_mentions: int = 2) -> list[str]:
    """A story's characters from person tags, name patterns, role titles and speech subjects (module doc),
    in order of first mention. A name pattern counts from one mention in the narration; a role title after
    one speech or ``min_mentions`` mentions; a
    surname-initial word tagged as a person ``min_mentions`` times (a tag right after 班长, 同桌 … counts
    twice) counts; anything else (a guessed clause subject, a reduplication, another tagged word) needs a
    speech and ``min_mentions`` mentions."""
    narr = _narration(text)
    tagged = _tagged_names(text)
    strong, weak = _pattern_candidates(text)
    speakers = _speech_subjects(text, narr, strong | weak | set(tagged))
    kept = set()
    for name in (strong | weak | set(tagged) | set(speakers)) - set(PRONOUNS) - NOT_NAMES:
        place = len(name) >= 3 and name.endswith(_PLACE_SUFFIX)
        spoke, mentions = speakers.get(name, 0) > 0, text.count(name)
        if name in strong and (spoke or mentions >= min_mentions or (name not in ROLES and name in narr)):
            kept.add(name)
        elif tagged.get(name, 0) >= min_mentions and name[0] in SURNAMES and not place:
            kept.add(name)
        elif spoke and mentions >= min_mentions and not place:
            kept.add(name)
    kept = {n for n in kept if not _only_inside_longer(n, kept, text)}
    kept = {n for n in kept if not (n in ROLES and any(k != n and k.endswith(n) for k in kept))}
    return sorted(kept, key=lambda n: (text.find(n), -len(n)))


def _resolve_pronoun(narr: str, before: int, names: Sequence[str]) -> str | None:
    """The character whose latest mention in the narration ends closest before offset ``before``."""
    best: tuple[int, int, str] | None = None
    head = narr[:before]
    for name in names:
        pos = head.rfind(name)
        if pos >= 0 and (best is None or (pos + len(name), len(name)) > best[:2]):
            best = (pos + len(name), len(name), name)
    return best[2] if best else None


def _starts_with_pronoun(clause: str) -> bool:
    c = _LEAD_ADVERB.sub("", clause.lstrip())
    return c[:1] in ("他", "她") and c[1:2] != "的" and c[1:2] != "们"


def annotate_speakers(text: str, characters: Sequence[str]) -> list[str | None]:
    """The speaker of every quoted turn of ``text`` among ``characters``: the first character named in the
    clause (else the sentence) leading into the quote; a leading 他/她 resolved to the latest character named
    in the narration before it; with no lead-in, the subject of a speech clause right after the quote or the
    name opening an action beat right after it; ``None`` where there is no subject."""
    narr = _narration(text)
    names = list(characters)
    return [turn_subject(narr, span, names) for span in dialogue_turns(text)]


def dialspk_record(story_id: str, text: str, characters: Sequence[str],
                   speakers: Sequence[str | None]) -> dict[str, Any] | None:
    """A DialSpk example: ``[MASK]`` before each turn with a speaker, candidates = ``characters``; ``None``
    when no turn has one. Literal ``[MASK`` in the story is escaped as ``[[MASK`` first (never a placeholder)."""
    chosen = [i for i, sp in enumerate(speakers) if sp is not None and sp in characters]
    if not chosen:
        return None
    return {"id": story_id, "story": insert_speaker_masks(escape_mask_text(text), chosen), "candidates": list(characters),
            "speakers": [speakers[i] for i in chosen]}


def agreement(predicted: Sequence[Sequence[str | None]], gold: Sequence[Sequence[str]]) -> dict[str, float]:
    """Turn-level agreement of automatic speakers with hand labels: ``agreement`` = correct / all gold turns,
    ``coverage`` = labelled / all, ``precision`` = correct / labelled."""
    total = sum(len(g) for g in gold)
    labelled = sum(p is not None for story in predicted for p in story)
    correct = sum(p == g for ps, gs in zip(predicted, gold) for p, g in zip(ps, gs))
    return {"agreement": correct / total, "coverage": labelled / total,
            "precision": correct / labelled if labelled else 0.0, "turns": total}


def recall(found: Sequence[Sequence[str]], gold: Sequence[Sequence[str]]) -> dict[str, float]:
    """Character recall (gold names found / gold names) and precision over a labelled sample."""
    hits = sum(len(set(f) & set(g)) for f, g in zip(found, gold))
    n_gold = sum(len(set(g)) for g in gold)
    n_found = sum(len(set(f)) for f in found)
    return {"recall": hits / n_gold, "precision": hits / n_found if n_found else 0.0, "gold": n_gold,
            "found": n_found, "hits": hits}
