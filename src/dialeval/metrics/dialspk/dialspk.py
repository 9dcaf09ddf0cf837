"""DialStory speaker recognition (DAC / SAC) as an `evaluate` module; see `dialeval.dialspk`."""

import dialeval.modules.dialspk as impl


class Dialspk(impl.DialSpkModule):
    """DAC = correct turns / turns; SAC = fully correct stories / stories."""
