"""Published numbers each leaderboard row should be compared with, keyed (dataset, config, target, statistic).

FULL's paper (De Bruyn et al. 2022) on FED; DialEvalMetrics (Yeh et al. 2021, "A Comprehensive Assessment of
Dialog Evaluation Metrics", EANCS, arXiv 2106.03706; its tables 4-8 and the README of exe1023/DialEvalMetrics
agree): the best of its 23 metrics per dataset, turn-level Spearman unless the key says dialog, and the FED
metric's (DialoGPT follow-up likelihood, FULL's closest relative) on the same data. Their item sets and human
targets are the papers' (USR and FED: "Overall"; GRADE's human score, here its coherence ratings;
PredictiveEngagement's engagement; Holistic's context coherence; DSTC9's overall), without intervals.
"""

from __future__ import annotations

PUBLISHED: dict[tuple[str, str, str, str], tuple[str, ...]] = {
    ("contest", "con_test_200_resp_gen", "label_value", "spearman"): (
        "human absolute scores 0.63, Sent-BERT 0.59 (Tevet & Berant 2021)", "Confidence NLI 0.62 (Stasaski & Hearst 2022)"),
    ("fed", "turn", "annotation_means.Overall", "spearman"): (
        "FULL 0.51 (De Bruyn et al. 2022, blenderbot-400M-distill)", "FULL 0.352 (SmolLM2 default, FULL card)",
        "best of 23: DynaEval 0.323, FED metric 0.095 (Yeh et al. 2021, DialEvalMetrics Table 7)"),
    ("fed", "dialog", "annotation_means.Overall", "spearman"): (
        "FULL 0.69 (De Bruyn et al. 2022, blenderbot-400M-distill)", "FULL 0.463 (SmolLM2 default, FULL card)",
        "best of 23: DynaEval 0.547, FED metric 0.320 (Yeh et al. 2021, DialEvalMetrics Table 7)"),
    ("dailydialog_plusplus", "default", "positive_vs_adversarial", "auc"): (
        "FULL 0.611 (SmolLM2 default, first 100 contexts, one pair each; FULL card)",),
    ("dailydialog_plusplus", "default", "positive_vs_random", "auc"): (
        "FULL 0.590 (SmolLM2 default, first 100 contexts, one pair each; FULL card)",),
    ("usr_topicalchat", "turn", "annotation_means.Overall", "spearman"): (
        "best of 23: USR 0.423 (Yeh et al. 2021, DialEvalMetrics Table 4)", "FED metric -0.135 (Yeh et al. 2021, DialEvalMetrics Table 4)"),
    ("usr_personachat", "turn", "annotation_means.Overall", "spearman"): (
        "best of 23: USL-H 0.523 (Yeh et al. 2021, DialEvalMetrics Table 4)", "FED metric -0.000 (Yeh et al. 2021, DialEvalMetrics Table 4)"),
    ("grade", "convai2", "annotation_means.coherence", "spearman"): (
        "best of 23: GRADE 0.571 (Yeh et al. 2021, DialEvalMetrics Table 5)", "FED metric -0.072 (Yeh et al. 2021, DialEvalMetrics Table 5)"),
    ("grade", "dailydialog", "annotation_means.coherence", "spearman"): (
        "best of 23: DEB 0.363 (Yeh et al. 2021, DialEvalMetrics Table 5)", "FED metric 0.064 (Yeh et al. 2021, DialEvalMetrics Table 5)"),
    ("grade", "empatheticdialogues", "annotation_means.coherence", "spearman"): (
        "best of 23: DEB 0.395 (Yeh et al. 2021, DialEvalMetrics Table 5)", "FED metric -0.044 (Yeh et al. 2021, DialEvalMetrics Table 5)"),
    ("predictive_engagement", "turn", "annotation_means.engagement", "spearman"): (
        "best of 23: USL-H 0.699 (Yeh et al. 2021, DialEvalMetrics Table 7)", "FED metric 0.159 (Yeh et al. 2021, DialEvalMetrics Table 7)"),
    ("holistic_pang2020", "context", "annotation_means.context coherence", "spearman"): (
        "best of 23: HolisticEval 0.764 (Yeh et al. 2021, DialEvalMetrics Table 8)", "FED metric 0.507 (Yeh et al. 2021, DialEvalMetrics Table 8)"),
    ("dstc9_interactive", "dialog", "annotation_means.human (overall)", "spearman"): (
        "best of 23: FlowScore 0.140 (Yeh et al. 2021, DialEvalMetrics Table 7)", "FED metric 0.120 (Yeh et al. 2021, DialEvalMetrics Table 7)"),
}
