"""Similarity-kernel diversity of response sets: the Vendi Score (Friedman & Dieng 2023) and Sent-BERT
diversity (Tevet & Berant 2021). Evaluate-free cores: validated inputs → per-set scores → signature.

- :mod:`.kernels`: the two kernels as explicit feature maps (n-gram counts, sentence embeddings) and the
  one embedding pass both metrics share (:func:`~.kernels.set_embeddings`);
- :mod:`.vendi`: ``VS_q = exp(H_q(eig(K/n)))``;
- :mod:`.sent_bert`: ``1 − mean pairwise cosine``.
"""
