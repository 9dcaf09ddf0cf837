"""nlg-eval's scorers (Sharma et al. 2017), the ones the dialogue papers of 2017–2020 report (USR among them):
pycocoevalcap 1.2, each response scored on its own as nlg-eval's ``compute_individual_metrics`` does.

- BLEU-n: whitespace tokens as given (no lower-casing), clipped n-gram precisions with pycocoevalcap's constants,
  ``p_k = (correct_k + 1e-15) / (guess_k + 1e-9)``, BLEU-n = BP · (Π_{k≤n} p_k)^{1/n}, brevity penalty against the
  closest reference length; 0–1.
- METEOR 1.5 (Denkowski & Lavie 2014): the Java jar pycocoevalcap ships (``-l en -norm``: exact, stem, synonym
  and paraphrase matches, its tuned English parameters); needs Java on the PATH.
- ROUGE-L: LCS F-measure with β = 1.2, (1 + β²) R P / (R + β² P), best precision and recall over references,
  tokens split on single spaces.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from importlib import metadata

IMPLEMENTATIONS = ("default", "nlg-eval")
JAVA_PACKAGE = "default-jre-headless"


def version() -> str:
    """pycocoevalcap's version (its scorers are what ``implementation="nlg-eval"`` means)."""
    return metadata.version("pycocoevalcap")


def _require(metric: str, java: bool = False) -> None:
    try:
        import pycocoevalcap  # noqa: F401
    except ImportError:
        raise ValueError(f"{metric} with implementation='nlg-eval' needs pycocoevalcap: pip install "
                         "'dialeval[reference]' (or pip install pycocoevalcap).") from None
    if java and shutil.which("java") is None:
        raise ValueError(f"{metric} with implementation='nlg-eval' runs METEOR 1.5 on Java, which is not installed: "
                         f"apt-get install -y {JAVA_PACKAGE} (or any Java 8+ on the PATH).")


def _inputs(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[dict, dict]:
    """nlg-eval's ``refs``/``hyps`` dicts: stripped texts, one line each (a newline would break METEOR's pipe)."""
    def line(text: str) -> str:
        return " ".join(text.splitlines()).strip()

    return ({i: [line(r) for r in refs] for i, refs in enumerate(references)},
            {i: [line(p)] for i, p in enumerate(predictions)})


def bleu_scores(predictions: Sequence[str], references: Sequence[Sequence[str]], max_order: int) -> tuple[list[float], float]:
    """Each response's BLEU-``max_order`` and the corpus BLEU (pycocoevalcap's ``Bleu``)."""
    _require("bleu")
    from pycocoevalcap.bleu.bleu import Bleu

    gts, res = _inputs(predictions, references)
    corpus, per_sentence = Bleu(max_order).compute_score(gts, res, verbose=0)
    return [float(x) for x in per_sentence[max_order - 1]], float(corpus[max_order - 1])


def meteor_scores(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """Each response's METEOR 1.5 score (pycocoevalcap's ``Meteor``, one Java process for all responses)."""
    _require("meteor", java=True)
    from pycocoevalcap.meteor.meteor import Meteor

    gts, res = _inputs(predictions, references)
    scorer = Meteor()
    try:
        _, scores = scorer.compute_score(gts, res)
    finally:
        del scorer  # its __del__ ends the Java process
    return [float(x) for x in scores]


def rouge_l_scores(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """Each response's ROUGE-L (pycocoevalcap's ``Rouge``, β = 1.2)."""
    _require("rouge_l")
    from pycocoevalcap.rouge.rouge import Rouge

    gts, res = _inputs(predictions, references)
    scorer = Rouge()
    return [float(scorer.calc_score(res[i], gts[i])) for i in res]
