"""Regenerate the demo's package data: small example excerpts (src/dialeval/resources/examples/*.json)
and the default Sem-Ent space fitted on DailyDialog test responses (src/dialeval/resources/semantic_space/).

Reads the original corpora through dialeval's dataset builders (``dialeval.datasets.load``) from the
folder given by ``--data-dir`` (default ``../shared/data`` next to the checkout); the demo and the Spaces
only read what is written here (the wheel carries it). Deterministic: fixed rows, no sampling; the space uses Sem-Ent's fixed
PCA/k-means seeds and the offline all-MiniLM-L6-v2 encoder in fp32 on CPU (a few minutes).

    python scripts/make_examples.py [--data-dir ../shared/data] [--skip-space]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "src" / "dialeval" / "resources" / "examples"
SPACE_DIR = REPO / "src" / "dialeval" / "resources" / "semantic_space"
N_SPACE_RESPONSES = 1000  # DailyDialog test responses the bundled Sem-Ent space is fitted on (≥ 39·k)
# DialSpk has no public corpus here: a hand-written illustration (3 stories, one wrong turn).
SPEAKERS_PREDICTED = [["Alice", "Bob", "Alice"], ["Tom", "Jerry"], ["Ann", "Ben", "Ann", "Ben"]]
SPEAKERS_GOLD = [["Alice", "Bob", "Bob"], ["Tom", "Jerry"], ["Ann", "Ben", "Ann", "Ben"]]


def clean(text: str) -> str:
    return " ".join(text.split())


def dailydialog_responses(data_dir: Path, n: int) -> list[str]:
    """The first ``n`` distinct DailyDialog test responses (≤ 300 characters), in file order."""
    from dialeval.datasets import load

    daily = load("dailydialog", "pairs", data_dir=data_dir / "dailydialog")["test"]
    seen: dict[str, None] = {}
    for row in daily:
        text = clean(row["response"])
        if text and len(text) <= 300:
            seen.setdefault(text)
        if len(seen) == n:
            break
    return list(seen)


def fit_space(data_dir: Path) -> None:
    from dialeval.semantic.space import SemanticSpace

    responses = dailydialog_responses(data_dir, N_SPACE_RESPONSES)
    space = SemanticSpace.fit(responses, device="cpu", progress=True)
    space.save(SPACE_DIR)
    (SPACE_DIR / "SOURCE.md").write_text(
        "# Bundled Sem-Ent space\n\n"
        f"Fitted by `scripts/make_examples.py` on the first {len(responses)} distinct DailyDialog test "
        "responses (ParlAI `test.json`, via `dialeval.datasets.load('dailydialog', 'pairs')`), encoder "
        f"`{space.encoder_revision}`, k={space.k}, fingerprint `{space.fingerprint}`.\n"
        "DailyDialog is CC BY-NC-SA 4.0. The Sem-Ent paper fits on the *training* responses, which are not "
        "available offline here: numbers from this space are for the demo, not comparable to the paper's.\n",
        encoding="utf-8")
    print(f"wrote {SPACE_DIR.relative_to(REPO)} (k={space.k}, fingerprint {space.fingerprint})")


def build(data_dir: Path) -> dict[str, dict]:
    from dialeval.datasets import load

    # The Sem-Ent reference box stays empty: the demo then uses the bundled space (see fit_space).
    common = {"speakers_predicted": SPEAKERS_PREDICTED, "speakers_gold": SPEAKERS_GOLD}

    contest = load("contest", "con_test_200_resp_gen", data_dir=data_dir / "diversity_eval")["test"]
    rows = sorted(contest, key=lambda r: r["sample_id"])
    low = [r for r in rows if r["label_value"] == 0.0][:2]
    high = [r for r in rows if r["label_value"] == 1.0][:2]
    contest_sets = [[clean(x) for x in r["responses"]] for r in low + high]
    fed = load("fed", "dialog", data_dir=data_dir / "fed")["test"]
    fed_dialogue = [f"{t['speaker']}: {clean(t['text'])}" for t in fed[0]["context"]]

    dpp = load("dailydialog_plusplus", "default", data_dir=data_dir / "dailydialog_plusplus")["validation"]  # DailyDialog++ dev, exported as validation
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
                       "DialSpk speakers: hand-written."),
            "responses": [x for s in contest_sets for x in s],
            "sets": contest_sets,
            "dialogue": fed_dialogue,
            **common,
        },
        "2_dailydialog_pp": {
            "title": "DailyDialog++ (dev): 5 human responses for each of 4 contexts",
            "source": ("Sai et al. 2020, DailyDialog++ dev ids " + ", ".join(str(r["id"]) for r in dpp_rows)
                       + "; the dialogue is the first context."),
            "responses": [x for s in dpp_sets for x in s],
            "sets": dpp_sets,
            "dialogue": [clean(t) for t in dpp_rows[0]["context"]],
            **common,
        },
        "3_fed": {
            "title": "FED: a Meena conversation (dialog level) and 30 system responses (turn level)",
            "source": (f"Mehri & Eskenazi 2020, FED dialog-level entry {fed[0]['id']} "
                       f"(system {fed.features['system'].int2str(fed[0]['system'])}, Overall {fed[0]['annotation_means']['Overall']:.1f}/4) and "
                       "the first 30 turn-level responses."),
            "responses": fed_responses,
            "sets": [fed_responses[i:i + 5] for i in range(0, 20, 5)],
            "dialogue": fed_dialogue,
            **common,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--skip-space", action="store_true", help="only rewrite the example excerpts")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for stem, example in build(args.data_dir).items():
        path = OUT / f"{stem}.json"
        path.write_text(json.dumps(example, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(REPO)} ({path.stat().st_size} bytes)")
    if not args.skip_space:
        fit_space(args.data_dir)


if __name__ == "__main__":
    main()
