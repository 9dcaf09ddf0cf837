"""Every declared option of every metric with a Ray plan, at every non-default value the declaration gives
(its choices, the other boolean, a valid int), on Ray and in one process: the same result, or a one-line
refusal from the plan for the options listed in REFUSED (issue 35: DialGen on Ray dropped ``quotes=strip``).

Every Ray job costs seconds (a job on the cluster: 4–20 s on 2 shared cores; on model actors a new process loads
the model), so each metric runs one job per *round*: round i sets the i-th non-default value of every option at
once, so every value is still set in one job compared with one process (an option read only under another, such
as FULL's ``lookback`` under ``compat``, is set where it has no effect); the options in SOLO change how the others
are read (compat mode, a chat template, seeds) and get a job of their own, as do the options the plan refuses
(REFUSED).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ray_helpers import LOOPBACK

os.environ.update(LOOPBACK)  # before ray is imported

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

import dialeval  # noqa: E402
from dialeval import registry  # noqa: E402
from dialeval.distributed import score  # noqa: E402

pytestmark = pytest.mark.slow
SPACE = Path(dialeval.__file__).parent / "resources" / "semantic_space"

INPUTS: dict[str, dict[str, list[Any]]] = {
    "responses": {"predictions": ["I don't know .", "I don't know .", "Sure , let's go to the beach !",
                                  "That sounds great , see you at noon .", "ok"]},
    "speakers": {"predictions": [["Alice", "Bob", "Alice"], ["Carol", "Dan"]],
                 "references": [["Alice", "Bob", "Bob"], ["Carol", "Dan"]]},
    # quoted turns: quotes=strip changes BLEU and Dist here (the DialStory mask replaces the text inside them)
    "story_turns": {"predictions": [["“我们明天去公园吧。”", "好的"], ['"你好，再见"', "「再见。」"]],
                    "references": [["明天我们一起去公园吧。", "好的，没问题"], ["你好再见", "再见"]]},
    "response_sets": {"predictions": [["I love cats .", "I hate cats .", "Cats are great ."],
                                      ["Let's meet at noon .", "Noon works for me ."]]},
    "dialogues": {"dialogues": [["Hi! How was your weekend?", "Great, I went hiking."],
                                ["Which trail did you take?", "The ridge trail, the views were amazing."]]},
}
#: (metric, option): the Ray plan refuses it (one line naming it); one process takes it.
REFUSED = {("distinct_n", "level"), ("sem_ent", "k"), ("nli_diversity", "return_probabilities")}
#: Options that change how the others are read: a round of their own.
SOLO = {("full_followup", "compat"), ("full_followup", "chat_template"), ("sem_ent", "seeds")}


def other_values(option: registry.Option) -> list[Any]:
    """The non-default values the declaration gives: its choices, the other boolean, a valid int (list)."""
    if option.choices:
        return [c for c in option.choices if c != option.default]
    if option.type == "bool":
        return [not option.default]
    low = 1 if option.minimum is None else int(option.minimum) + 1
    if option.type == "int":  # half the default, else a small size inside the declared range
        value = max(low - 1, option.default // 2) if isinstance(option.default, int) else max(low, 64)
        return [min(value if value != option.default else value + 1, int(option.maximum or value))]
    if option.type == "ints":
        return [[low]]
    if option.type == "float":
        return [low + 1.5]
    return []  # free text, paths, models, texts: not enumerable from the declaration


def ray_metrics() -> list[registry.MetricDeclaration]:
    return [d for d in registry.declarations().values() if d.scale_out]


def on_actors(decl: registry.MetricDeclaration) -> bool:
    return bool(decl.scale_out_hooks().get("actors"))


def cases() -> list[Any]:
    out = []
    for decl in ray_metrics():
        valued = [(o.name, other_values(o)) for o in decl.options]
        out.append(pytest.param(decl.name, {}, id=f"{decl.name}-defaults"))
        alone = [(name, v) for name, vs in valued for v in vs if (decl.name, name) in REFUSED | SOLO]
        out += [pytest.param(decl.name, {name: v}, id=f"{decl.name}-{name}={v}") for name, v in alone]
        shared = [(name, vs) for name, vs in valued if vs and (decl.name, name) not in REFUSED | SOLO]
        for i in range(max((len(vs) for _, vs in shared), default=0)):
            combo = {name: vs[i] for name, vs in shared if i < len(vs)}
            out.append(pytest.param(decl.name, combo, id=f"{decl.name}-round{i}"))
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("options")
    out = {}
    for kind, columns in INPUTS.items():
        out[kind] = folder / f"{kind}.parquet"
        pq.write_table(pa.table(columns), out[kind])
    return out


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The options a metric needs to run at all here: a tiny model on CPU, the bundled space."""
    from dialeval.testing.blenderbot import build_tiny_causal_lm
    from dialeval.testing.roberta import tiny_nli_model

    folder = tmp_path_factory.mktemp("models")
    return {"sem_ent": {"space": str(SPACE)},
            "full_followup": {"model": str(build_tiny_causal_lm(folder / "lm", arch="gpt2")), "device": "cpu"},
            "nli_diversity": {"model": str(tiny_nli_model(folder / "nli")), "device": "cpu"}}


def one_process(decl: registry.MetricDeclaration, options: dict[str, Any]) -> dict[str, Any]:
    extra = {"config": decl.ui_config or decl.configs[0]} if len(decl.configs) > 1 else {}
    return decl.core_function()(**INPUTS[decl.inputs], **extra, **options)


def same(ray_value: Any, local_value: Any) -> bool:
    if isinstance(ray_value, float) and isinstance(local_value, float):
        return ray_value == pytest.approx(local_value, rel=1e-6, abs=1e-12)  # model scores: other batch shapes
    return ray_value == local_value


@pytest.mark.parametrize(("metric", "options"), cases())
def test_every_option_on_ray_equals_one_process(cluster, files, base, metric, options):
    decl = registry.get(metric)
    opts = {**base.get(metric, {}), **options}
    refused = sorted(name for name in options if (metric, name) in REFUSED)
    try:
        local: dict[str, Any] | None = one_process(decl, opts)
    except (ValueError, TypeError) as exc:
        assert len(options) <= 1, f"one process refuses this round ({exc}); give one of its options a SOLO round"
        local = None
    columns = {role: role for role in INPUTS[decl.inputs]}
    if local is None or refused:
        with pytest.raises((ValueError, TypeError)) as caught:
            score(str(files[decl.inputs]), metric, columns, address=cluster, rows_per_batch=2, concurrency=1, **opts)
        message = str(caught.value)
        assert "\n" not in message.strip(), message  # one line, whether one process refuses it too or only Ray
        if local is not None:
            assert refused[0] in message, message
        return
    got = score(str(files[decl.inputs]), metric, columns, address=cluster, rows_per_batch=2, concurrency=1, **opts)
    assert got.get("signature") and got["signature"] == local["signature"]
    if not on_actors(decl) and decl.inputs != "speakers":
        assert got == local  # corpus metrics: the very same result
        return
    # per-item metrics return the reduced result (the per-item lists go to the output folder)
    assert set(got) <= set(local) | {"num_items", "config"}, sorted(set(got) - set(local))
    for key, value in got.items():
        if key in local:
            assert same(value, local[key]), (key, value, local[key])
    scored = {"num_items", "signature", "config"}
    assert set(got) - scored, got  # a score was compared, not only the settings
