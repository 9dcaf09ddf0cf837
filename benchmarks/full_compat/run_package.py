"""Run the reference package `full` 0.0.3.1 on the compat cases (executed by benchmarks/full_venv/bin/python).

Usage: full_venv/bin/python run_package.py MODEL_DIR CASES_JSON OUT_JSON
Writes, for each case, the package's score (and the encoder/label lengths it used, for diagnosis).
"""

import json
import sys

import full
import transformers
from full import FULL


def main(model_dir: str, cases_path: str, out_path: str) -> None:
    cases = json.load(open(cases_path, encoding="utf-8"))
    default = FULL(model_name=model_dir, device="cpu")
    results = []
    for case in cases:
        scorer = FULL(model_name=model_dir, device="cpu", follow_ups=case["follow_ups"]) if case.get("follow_ups") else default
        if case["level"] == "turn":
            score = scorer.evaluate_turn(case["context"], case["response"])
            turns = case["context"][-scorer.lookback:] + [case["response"]]
        else:
            score = scorer.evaluate_dialog(case["context"])
            turns = case["context"][-scorer.lookback:]
        text = scorer.sep_token + scorer.sep_token.join(turns)
        n_enc = len(scorer.tokenizer(text, truncation=True)["input_ids"])
        n_full = len(scorer.tokenizer(text)["input_ids"])
        results.append({"name": case["name"], "score": score, "encoder_tokens": n_enc, "untruncated_tokens": n_full})
    meta = {"full": getattr(full, "__version__", None) or "0.0.3.1", "transformers": transformers.__version__,
            "follow_ups": list(full.eval.default_follow_ups)}
    json.dump({"meta": meta, "results": results}, open(out_path, "w", encoding="utf-8"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:4])
