"""Regenerate the small example excerpts bundled with the Space (spaces/demo/examples/*.json).

Reads the original corpora through dialeval's dataset builders (``dialeval.datasets.load``) from the
folder given by ``--data-dir`` (default ``../shared/data`` next to the checkout); the Space itself only
reads the excerpts written here. Deterministic: fixed rows, no sampling.

    python spaces/demo/make_examples.py [--data-dir ../shared/data]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "examples"
REPO = Path(__file__).resolve().parents[2]
N_REFERENCES = 300  # Sem-Ent reference responses (DailyDialog test responses)
# DialSpk has no public corpus here: a hand-written illustration (3 stories, one wrong turn).
SPEAKERS_PREDICTED = [["Alice", "Bob", "Alice"], ["Tom", "Jerry"], ["Ann", "Ben", "Ann", "Ben"]]
SPEAKERS_GOLD = [["Alice", "Bob", "Bob"], ["Tom", "Jerry"], ["Ann", "Ben", "Ann", "Ben"]]


def clean(text: str) -> str:
    return " ".join(text.split())


def build(data_dir: Path) -> dict[str, dict]:
    from dialeval.datasets import load

    daily = load("dailydialog", "pairs", data_dir=data_dir / "dailydialog")["test"]
    references = []
    for row in daily:
        text = clean(row["response"])
        if text and text not in references and len(text) <= 300:
            references.append(text)
        if len(references) == N_REFERENCES:
            break
    common = {"references": references, "speakers_predicted": SPEAKERS_PREDICTED, "speakers_gold": SPEAKERS_GOLD}

    contest = load("contest", "con_test_200_resp_gen", data_dir=data_dir / "diversity_eval")["test"]
    rows = sorted(contest, key=lambda r: r["sample_id"])
    low = [r for r in rows if r["label_value"] == 0.0][:2]
    high = [r for r in rows if r["label_value"] == 1.0][:2]
    contest_sets = [[clean(x) for x in r["responses"]] for r in low + high]
    fed = load("fed", "dialog", data_dir=data_dir / "fed")["test"]
    fed_dialogue = [f"{t['speaker']}: {clean(t['text'])}" for t in fed[0]["context"]]

    dpp = load("dailydialog_plusplus", "default", data_dir=data_dir / "dailydialog_plusplus")["dev"]
    dpp_rows = [dpp[i] for i in range(4)]
    dpp_sets = [[clean(x) for x in r["positive_responses"]] for r in dpp_rows]

    fed_turn = load("fed", "turn", data_dir=data_dir / "fed")["test"]
    fed_responses = [clean(fed_turn[i]["response"]) for i in range(30)]

    return {
        "1_contest": {
            "title": "conTest (resp_gen): 2 low- and 2 high-diversity response sets",
            "source": ("Tevet & Berant 2021, conTest con_test_200_resp_gen: "
                       + ", ".join(r["sample_id"] for r in low) + " at label 0 (low diversity) and "
                       + ", ".join(r["sample_id"] for r in high) + " at label 1 (high). "
                       "Sem-Ent references: DailyDialog test responses. DialSpk speakers: hand-written."),
            "responses": [x for s in contest_sets for x in s],
            "sets": contest_sets,
            "dialogue": fed_dialogue,
            **common,
        },
        "2_dailydialog_pp": {
            "title": "DailyDialog++ (dev): 5 human responses for each of 4 contexts",
            "source": ("Sai et al. 2020, DailyDialog++ dev ids " + ", ".join(str(r["id"]) for r in dpp_rows)
                       + "; the dialogue is the first context. Sem-Ent references: DailyDialog test responses."),
            "responses": [x for s in dpp_sets for x in s],
            "sets": dpp_sets,
            "dialogue": [clean(t) for t in dpp_rows[0]["context"]],
            **common,
        },
        "3_fed": {
            "title": "FED: a Meena conversation (dialog level) and 30 system responses (turn level)",
            "source": (f"Mehri & Eskenazi 2020, FED dialog-level entry {fed[0]['id']} "
                       f"(system {fed[0]['system']}, Overall {fed[0]['annotation_means']['Overall']:.1f}/4) and "
                       "the first 30 turn-level responses. Sem-Ent references: DailyDialog test responses."),
            "responses": fed_responses,
            "sets": [fed_responses[i:i + 5] for i in range(0, 20, 5)],
            "dialogue": fed_dialogue,
            **common,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for stem, example in build(args.data_dir).items():
        path = OUT / f"{stem}.json"
        path.write_text(json.dumps(example, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(REPO)} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
