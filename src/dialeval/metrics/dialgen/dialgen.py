"""DialStory masked dialogue generation (BLEU-1/2, Dist-2/3/4, coherence) as an `evaluate` module;
see `dialeval.dialgen`."""

import dialeval.modules.dialgen as impl


class Dialgen(impl.DialGenModule):
    """BLEU-n = mean sentence BLEU-n over masked turns; Dist-n over generated turns; coherence = mean P(original)."""
