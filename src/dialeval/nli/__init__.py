"""NLI Diversity and Diversity Threshold Generation (Stasaski & Hearst 2022): the classifier and pair
scoring (:mod:`.core`), the metric's core (:mod:`.nli_diversity`) and DTG (:mod:`.generation`)."""
