"""NLI Diversity as an `evaluate` module; the implementation lives in `dialeval.nli`."""

import dialeval.modules.nli_diversity as impl


class NLIDiversity(impl.NLIDiversityModule):
    """NLI Diversity (Stasaski & Hearst 2022): contradictions minus entailments over ordered response pairs."""
