"""Regenerate the demo's package data: small example excerpts (src/dialeval/resources/examples/*.json)
and the default Sem-Ent space fitted on DailyDialog *training* responses (src/dialeval/resources/semantic_space/),
disjoint from the test split that the README and the cards score.

Reads the original corpora through dialeval's dataset builders (``dialeval.datasets.load``) from the
folder given by ``--data-dir`` (default ``../shared/data`` next to the checkout); the demo and the Spaces
only read what is written here (the wheel carries it). Deterministic: fixed rows, no sampling; the space uses Sem-Ent's fixed
PCA/k-means seeds and the offline all-MiniLM-L6-v2 encoder in fp32 on CPU (a few minutes).

    python scripts/make_examples.py [--data-dir ../shared/data] [--skip-space]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "src" / "dialeval" / "resources" / "examples"
SPACE_DIR = REPO / "src" / "dialeval" / "resources" / "semantic_space"
# The bundled Sem-Ent space is fitted on every DailyDialog training response (76,053: all turns but each
# dialogue's first, as released, repeats included), as the Sem-Ent paper fits it (scripts/sem_ent_train_skew.py).
SPACE_SPLIT = "train"
# DialSpk and DialGen read the DialStory sample shipped with the dataset card (datasets_scripts/cards/
# dialstory/sample): each example gets its own stories for DialSpk (gold speakers vs. the nearest-mention
# baseline's predictions) and the DialGen story pair (gold turns vs. a copy-the-previous-utterance baseline).
# Per example: its stories and the predictor (dialeval's nearest-mention baseline, or the candidates
# taken in turn), so that DialSpk's numbers differ between the examples.
DIALSPK_STORIES = {"1_contest": ("nearest", ("story-002", "story-003")), "2_dailydialog_pp": ("cycle", ("story-001",)),
                   "3_fed": ("cycle", ("story-004",))}
PREDICTORS = {"nearest": "the nearest-mention baseline", "cycle": "the candidates taken in turn"}
QUOTE = re.compile(r"[“「]([^”」]*)[”」]")


def clean(text: str) -> str:
    return " ".join(text.split())


def dailydialog_pairs(data_dir: Path, split: str):
    """DailyDialog's ``pairs`` config of ``split`` as published: the release repeats three dialogues
    (validation 962 = 709; test 203 = 64 and 991 = 769), kept as they are (``allow_duplicates=True``), as the
    README's real-data table does."""
    from dialeval.datasets import load

    return load("dailydialog", "pairs", data_dir=data_dir / "dailydialog", allow_duplicates=True)[split]


def dailydialog_responses(data_dir: Path, split: str) -> list[str]:
    """Every non-empty response of DailyDialog ``split`` (stripped), in file order: the same list as
    ``benchmarks/sem_ent.py``'s reader of the ParlAI JSON."""
    return [r["response"].strip() for r in dailydialog_pairs(data_dir, split) if r["response"].strip()]


#: A refit whose arrays are within this of the bundled space's, with the same reference distribution, is the
#: same space up to float rounding (BLAS and thread order change the last bits of an encoder pass and of
#: k-means): the bundled space, and so its fingerprint, is kept.
REFIT_TOLERANCE = 1e-4


def space_arrays(space: Any) -> list[Any]:
    return [space.pca.mean, space.pca.components, space.centroids]


def equivalent(new: list[Any], old: list[Any], new_dist: Any, old_dist: Any, tol: float = REFIT_TOLERANCE) -> float | None:
    """The largest array difference when ``new`` is ``old`` up to float rounding (same shapes, every array within
    ``tol``, the same reference distribution over clusters); ``None`` when they differ."""
    import numpy as np

    if len(new) != len(old) or any(np.shape(a) != np.shape(b) for a, b in zip(new, old)):
        return None
    worst = max(float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float)))) for a, b in zip(new, old))
    same_dist = np.allclose(np.asarray(new_dist, float), np.asarray(old_dist, float), rtol=0, atol=1e-9)
    return worst if worst <= tol and same_dist else None


def source_text(n: int, space: Any) -> str:
    """The bundled space's SOURCE.md."""
    return ("# Bundled Sem-Ent space\n\n"
            f"Fitted by `python scripts/make_examples.py` on all {n} DailyDialog {SPACE_SPLIT} responses (the original "
            "release's `train/` folder, every turn but each dialogue's first, repeats kept, via "
            "`dialeval.datasets.load('dailydialog', 'pairs', allow_duplicates=True)`), as the Sem-Ent paper fits it, "
            f"encoder `{space.encoder_revision}`, k={space.k}, fingerprint `{space.fingerprint}`.\n"
            "82 of the 1,000 DailyDialog test dialogues begin like a training dialogue (the release's own "
            "near-duplicates), as in the paper's setting. Up to this release the space was fitted on the 7,069 "
            "validation responses (fingerprint `4ac46d9d6851`), and up to dialeval 0.1.0 on 1,000 test responses "
            "(`556004a094fb`).\n"
            "DailyDialog is CC BY-NC-SA 4.0. The paper's encoder is DialoGPT-large; this space's is the offline "
            "default, so its numbers are not the paper's.\n")


def fit_space(data_dir: Path, out: Path = SPACE_DIR, force: bool = False) -> None:
    from dialeval.semantic.space import SemanticSpace

    responses = dailydialog_responses(data_dir, SPACE_SPLIT)
    space = SemanticSpace.fit(responses, device="cpu", progress=True)
    if not force and (out / "space.json").is_file():
        old = SemanticSpace.load(out)
        worst = equivalent(space_arrays(space), space_arrays(old), space.reference_distribution,
                           old.reference_distribution)
        if worst is not None:
            print(f"kept {out}: the refit (fingerprint {space.fingerprint}) equals the bundled space up to float "
                  f"rounding (arrays within {worst:.1e}, same cluster sizes), so its fingerprint {old.fingerprint} "
                  "stays; --force-space writes the refit")
            return
    space.save(out)
    (out / "SOURCE.md").write_text(source_text(len(responses), space), encoding="utf-8")
    print(f"wrote {out} (k={space.k}, fingerprint {space.fingerprint})")


def dialstory_sample(task: str) -> list[dict]:
    from dialeval.resources import dataset_card_dir

    path = dataset_card_dir("dialstory") / "sample" / task / "test.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def speakers(stem: str) -> dict[str, list[list[str]]]:
    """Gold speakers of this example's DialSpk stories and its predictor's speakers (see DIALSPK_STORIES)."""
    from dialeval.dialstory.dialspk import baseline_predictions

    predictor, ids = DIALSPK_STORIES[stem]
    rows = [r for r in dialstory_sample("dialspk") if r["id"] in ids]
    if predictor == "nearest":
        predicted = baseline_predictions([r["story"] for r in rows], [r["candidates"] for r in rows])
    else:
        predicted = [[r["candidates"][i % len(r["candidates"])] for i in range(len(r["speakers"]))] for r in rows]
    return {"speakers_predicted": predicted, "speakers_gold": [r["speakers"] for r in rows]}


def story_note(stem: str) -> str:
    predictor, ids = DIALSPK_STORIES[stem]
    return (f"DialSpk: DialStory sample {', '.join(ids)}, gold speakers vs. {PREDICTORS[predictor]}; DialGen: "
            "DialStory sample story-004, gold turns vs. the last utterance quoted before each gap.")


def story_turns() -> dict[str, list[list[str]]]:
    """The DialGen story's gold turns and, for each gap, the last utterance quoted before it (a baseline)."""
    row = dialstory_sample("dialgen")[0]
    generated = []
    for i in range(1, len(row["targets"]) + 1):
        before = row["story"][:row["story"].index(f"[MASK{i}]")]
        quotes = [q for q in QUOTE.findall(before) if not q.startswith("[MASK")]
        generated.append(quotes[-1])
    return {"turns_generated": [generated], "turns_gold": [list(row["targets"])]}


def build(data_dir: Path) -> dict[str, dict]:
    from dialeval.datasets import load

    # The Sem-Ent reference box stays empty: the demo then uses the bundled space (see fit_space).
    turns = story_turns()

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

    daily = dailydialog_pairs(data_dir, "test")
    tea = next(r for r in daily if r["dialogue_id"] == 3 and len(r["context"]) == 7)  # about tea, 8 turns
    daily_dialogue = [clean(t) for t in [*tea["context"], tea["response"]]]

    fed_turn = load("fed", "turn", data_dir=data_dir / "fed")["test"]
    fed_responses = [clean(fed_turn[i]["response"]) for i in range(30)]

    return {
        "1_contest": {
            "title": "conTest (resp_gen): 2 low- and 2 high-diversity response sets",
            "source": ("Tevet & Berant 2021, conTest con_test_200_resp_gen: "
                       + ", ".join(r["sample_id"] for r in low) + " at label 0 (low diversity) and "
                       + ", ".join(r["sample_id"] for r in high) + " at label 1 (high). The dialogue: "
                       f"DailyDialog test dialogue {tea['dialogue_id']} (its first {len(daily_dialogue)} turns). "
                       + story_note("1_contest")),
            "responses": [x for s in contest_sets for x in s],
            "sets": contest_sets,
            "dialogue": daily_dialogue,
            **speakers("1_contest"), **turns,
        },
        "2_dailydialog_pp": {
            "title": "DailyDialog++ (dev): 5 human responses for each of 4 contexts",
            "source": ("Sai et al. 2020, DailyDialog++ dev ids " + ", ".join(str(r["id"]) for r in dpp_rows)
                       + "; the dialogue is the first context. " + story_note("2_dailydialog_pp")),
            "responses": [x for s in dpp_sets for x in s],
            "sets": dpp_sets,
            "dialogue": [clean(t) for t in dpp_rows[0]["context"]],
            **speakers("2_dailydialog_pp"), **turns,
        },
        "3_fed": {
            "title": "FED: a Meena conversation (dialog level) and 30 system responses (turn level)",
            "source": (f"Mehri & Eskenazi 2020, FED dialog-level entry {fed[0]['id']} "
                       f"(system {fed.features['system'].int2str(fed[0]['system'])}, Overall {fed[0]['annotation_means']['Overall']:.1f}/4) and "
                       "the first 30 turn-level responses. " + story_note("3_fed")),
            "responses": fed_responses,
            "sets": [fed_responses[i:i + 5] for i in range(0, 20, 5)],
            "dialogue": fed_dialogue,
            **speakers("3_fed"), **turns,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--skip-space", action="store_true", help="only rewrite the example excerpts")
    parser.add_argument("--force-space", action="store_true",
                        help="write the refitted space even when it equals the bundled one up to float rounding")
    parser.add_argument("--examples-out", type=Path, default=OUT, help="folder of the example *.json files "
                        "(default: the package's resources/examples)")
    parser.add_argument("--space-out", type=Path, default=SPACE_DIR, help="folder of the fitted space "
                        "(default: the package's resources/semantic_space)")
    args = parser.parse_args()
    args.examples_out.mkdir(parents=True, exist_ok=True)
    for stem, example in build(args.data_dir).items():
        path = args.examples_out / f"{stem}.json"
        path.write_text(json.dumps(example, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    if not args.skip_space:
        fit_space(args.data_dir, args.space_out, force=args.force_space)


if __name__ == "__main__":
    main()
