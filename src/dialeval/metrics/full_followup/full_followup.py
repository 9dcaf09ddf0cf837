"""FULL (follow-up likelihood) as an `evaluate` module, configs `turn` and `dialog`; the implementation
lives in `dialeval.full` (texts, aggregation), `dialeval.full_scorer` (the model side) and
`dialeval.modules.full_followup`."""

import dialeval.modules.full_followup as impl


class FullFollowup(impl.FullFollowupModule):
    """FULL = mean over negative follow-ups f of NLL(f | history) (De Bruyn et al. 2022); higher = better."""
