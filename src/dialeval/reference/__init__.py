"""Reference-based baselines that every published dialogue meta-evaluation reports (USR, GRADE, DialEvalMetrics,
DSTC10): token F-1, BLEU-n and chrF (sacrebleu), METEOR (nltk with WordNet 3.0), ROUGE-L (rouge-score) and
BERTScore (bert-score). Each compares a response with one or several human references.

The scores come from the libraries people already trust; this family only validates the inputs once, calls the
library per item and signs the result. It may import :mod:`dialeval.io` and :mod:`dialeval.models`.
"""
