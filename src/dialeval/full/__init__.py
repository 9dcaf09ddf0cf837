"""FULL follow-up likelihood (De Bruyn et al. 2022): texts, truncation and aggregation (:mod:`.texts`),
measured default formulations (:mod:`.formulation`), the LM scorer (:mod:`.scorer`) and the metric's core
(:mod:`.full_followup`)."""
