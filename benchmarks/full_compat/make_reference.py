"""Build the tiny BlenderBot, run the `full` package on it in its virtualenv, and store the package's
outputs as tests/data/full_compat_reference.json (the numbers come from the reference implementation).

    bash benchmarks/full_compat/setup_venv.sh            # once
    python benchmarks/full_compat/make_reference.py      # rebuilds model, runs the package, writes the JSON
    python benchmarks/full_compat/compare.py             # our compat mode vs that JSON

The JSON also records how to rebuild the model (builder + seed + sizes) and its fingerprint, so the test
can rebuild the identical model without the venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[2]
VENV_PY = REPO / "benchmarks" / "full_venv" / "bin" / "python"
OUT = REPO / "tests" / "data" / "full_compat_reference.json"
BUILDER = {"function": "dialeval.testing.blenderbot.build_tiny_blenderbot", "kwargs": {"seed": 0, "vocab_size": 400,
                                                                                     "model_max_length": 128}}

_TURNS = [
    "Hello , how are you today ?", "I am fine , thank you . And you ?", "Do you like music ? I love jazz and rock .",
    "Let's go to the movies tonight !", "The weather is nice , isn't it ?", "Where are you from ? I am from Beijing .",
    "My favourite food is pizza with cheese .", "Could you help me with my homework please ?",
    "Sure , what do you need ?", "I think that is a great idea .", "We should eat dinner at seven .",
    "Good morning , sir . Can I help you ?", "Thank you very much for your help .",
]


def cases() -> list[dict]:
    long_history = [_TURNS[i % len(_TURNS)] + f" ({i})" for i in range(30)]  # ≫ 128 tokens
    many_turns = [f"turn {i}: " + _TURNS[i % len(_TURNS)] for i in range(57)]  # > 50 turns
    return [
        {"name": "turn_short", "level": "turn", "context": ["Hi!", "Hi! What's up?"], "response": "Nothing much , you ?"},
        {"name": "turn_one_turn", "level": "turn", "context": ["Hello , how are you today ?"],
         "response": "I don't know what you mean ."},
        {"name": "turn_unicode", "level": "turn", "context": ["Café au lait? 😀", "Oui ! Très bien ."],
         "response": "Naïve question — sorry !"},
        {"name": "turn_long_history", "level": "turn", "context": long_history, "response": "Yes . No . Maybe . Okay ."},
        {"name": "turn_over_lookback", "level": "turn", "context": many_turns, "response": "The quick brown fox ."},
        {"name": "dialog_short", "level": "dialog", "context": ["User: Hi!", "System: Hi! What's up?",
                                                                "User: Nothing much, how about you"]},
        {"name": "dialog_single", "level": "dialog", "context": ["Sure , what do you need ?"]},
        {"name": "dialog_long_history", "level": "dialog", "context": long_history},
        {"name": "dialog_over_lookback", "level": "dialog", "context": many_turns},
        {"name": "turn_custom_follow_ups", "level": "turn", "context": ["Do you like music ?"],
         "response": "I love jazz .", "follow_ups": ["That's great!", "You're really boring."]},
    ]


def main() -> None:
    from dialeval.testing.blenderbot import build_tiny_blenderbot, state_fingerprint

    if not VENV_PY.exists():
        sys.exit(f"{VENV_PY} is missing: run benchmarks/full_compat/setup_venv.sh first")
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "tiny_blenderbot"
        build_tiny_blenderbot(model_dir, **BUILDER["kwargs"])
        cases_path = Path(tmp) / "cases.json"
        cases_path.write_text(json.dumps(cases(), ensure_ascii=False), encoding="utf-8")
        out_path = Path(tmp) / "package_out.json"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        subprocess.run([str(VENV_PY), str(Path(__file__).with_name("run_package.py")), str(model_dir), str(cases_path),
                        str(out_path)], check=True, env=env)
        package = json.loads(out_path.read_text(encoding="utf-8"))
        fingerprint = state_fingerprint(model_dir)
    by_name = {r["name"]: r for r in package["results"]}
    data = {
        "about": "Outputs of the reference package `full` 0.0.3.1 (run in benchmarks/full_venv with the versions in "
                 "`package`) on a tiny random BlenderBot rebuilt by `builder`; written by "
                 "benchmarks/full_compat/make_reference.py. Do not edit by hand.",
        "builder": BUILDER,
        "model_fingerprint": fingerprint,
        "package": package["meta"],
        "cases": [{**c, "package_score": by_name[c["name"]]["score"],
                   "package_encoder_tokens": by_name[c["name"]]["encoder_tokens"],
                   "untruncated_tokens": by_name[c["name"]]["untruncated_tokens"]} for c in cases()],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for c in data["cases"]:
        print(f"{c['name']:24s} package={c['package_score']:.9g} enc_tokens={c['package_encoder_tokens']} "
              f"(untruncated {c['untruncated_tokens']})")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
