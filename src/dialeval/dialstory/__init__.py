"""DialStory (Yao et al. 2022): speaker recognition DAC/SAC (:mod:`.dialspk`), masked dialogue generation
BLEU/Dist/coherence (:mod:`.dialgen`) and the coherence classifier (:mod:`.coherence`, data in
:mod:`.coherence_data`)."""
