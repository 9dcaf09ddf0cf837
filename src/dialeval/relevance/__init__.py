"""Reference-free response quality: context relevance (:mod:`core`) and the learned quality evaluator trained on
unlabelled dialogue (:mod:`corpus`, :mod:`model`, :mod:`training`, :mod:`trainer`, :mod:`evaluator`)."""
