"""Issue 36 (items 5-7) and issue 33 (items 7 and 9): one output policy over every path option, the per-client
limit behind the Space's proxy, bounded options and strict JSON, a full disk. Every test here failed before its fix."""

from __future__ import annotations

import pytest
from test_hostile_numbers import _one_error


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    from dialeval.testing.gpt2 import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


# ------------------------------------------------- 36.5 / 33.7: one output policy over every path option of a command

def _text_file(tmp_path, name="r.txt"):
    path = tmp_path / name
    path.write_text("a b\nc d\n", encoding="utf-8")
    return path


def test_score_refuses_an_existing_output_file_and_a_symlink_to_one(tmp_path, capsys):
    from dialeval.cli import main

    texts = _text_file(tmp_path)
    mine = tmp_path / "results.json"
    mine.write_text("precious", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(mine)
    for out in (mine, link):
        line = _one_error(capsys, main(["score", "--metric", "distinct_n", "--input", str(texts), "--output", str(out)]))
        assert "is an existing file" in line and "--overwrite" in line
    assert mine.read_text(encoding="utf-8") == "precious"
    assert main(["score", "--metric", "distinct_n", "--input", str(texts), "--output", str(mine), "--overwrite"]) == 0
    assert '"distinct_n"' in mine.read_text(encoding="utf-8")


def test_abbreviated_options_are_refused_in_every_command(tmp_path, capsys):
    import argparse

    from dialeval.cli import build_parser, main

    texts = _text_file(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["score", "--metric", "distinct_n", "--input", str(texts), "--out", str(tmp_path / "o.json")])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and "unrecognized arguments: --out" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o.json").exists()

    def parsers(p):
        yield p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for child in a.choices.values():
                    yield from parsers(child)

    assert all(not p.allow_abbrev for p in parsers(build_parser()))


def test_an_output_inside_a_metric_argument_folder_is_refused(tmp_path, capsys):
    from dialeval.cli import main

    texts = _text_file(tmp_path)
    space = tmp_path / "space"
    space.mkdir()
    (space / "space.json").write_text("{}", encoding="utf-8")
    link = tmp_path / "via"
    link.symlink_to(space)
    for out in (space / "results.json", link / "results.json"):
        line = _one_error(capsys, main(["score", "--metric", "sem_ent", "--input", str(texts), "--metric-arg",
                                        f"space={space}", "--output", str(out)]))
        assert "lies inside the input" in line
    assert sorted(p.name for p in space.iterdir()) == ["space.json"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--out", "-", "--plot", "-"], "both write to stdout"),
    (["--out", "{t}/same", "--plot", "{t}/same"], "is --plot"),
    (["--out", "{t}/dir", "--plot", "{t}/dir/p.png"], "contains --plot"),
])
def test_meta_eval_outputs_may_not_collide(shared_data, tmp_path, capsys, extra, message):
    from dialeval.cli import main

    argv = ["meta-eval", "fed", "--metric", "column:x", "--data-dir", str(shared_data / "fed"),
            *[e.format(t=tmp_path) for e in extra]]
    assert message in _one_error(capsys, main(argv))
    assert sorted(tmp_path.iterdir()) == []


def test_fit_space_never_replaces_what_it_did_not_write(tmp_path, capsys, monkeypatch):
    from dialeval.cli import main
    from dialeval.semantic.space import SemanticSpace

    def no_fit(*args, **kwargs):
        raise AssertionError("the fit ran although --out was unusable")

    monkeypatch.setattr(SemanticSpace, "fit", classmethod(no_fit))
    ref = _text_file(tmp_path, "ref.txt")
    home = tmp_path / "home"
    home.mkdir()
    (home / "space.json").write_text("unrelated", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    encoder = tmp_path / "enc"
    encoder.mkdir()
    (encoder / "config.json").write_text("{}", encoding="utf-8")
    for out, message in (("~", "non-empty folder this command did not create"),
                         (str(encoder), "is the input"), (str(encoder / "sub"), "lies inside the input")):
        line = _one_error(capsys, main(["fit-space", "--reference", str(ref), "--encoder", str(encoder),
                                        "--out", out]))
        assert message in line
    assert (home / "space.json").read_text(encoding="utf-8") == "unrelated"
    assert sorted(p.name for p in encoder.iterdir()) == ["config.json"]


def test_hub_build_out_inside_the_leaderboard_folder_is_refused(tmp_path, capsys):
    from dialeval.cli import main

    lb = tmp_path / "lb"
    (lb / "cache").mkdir(parents=True)
    (lb / "leaderboard.json").write_text("{}", encoding="utf-8")
    for out in (lb / "sub", lb / "cache"):
        line = _one_error(capsys, main(["hub", "build", "--org", "a", "--out", str(out), "--leaderboard", str(lb),
                                        "--from-index", "--no-datasets", "--overwrite"]))
        assert "lies inside the input" in line
    assert sorted(p.name for p in lb.iterdir()) == ["cache", "leaderboard.json"]


# ------------------------------------------------------- 36.6 the per-client limit keys on what the proxy appends

class _Req:
    def __init__(self, forwarded: str | None, peer: str = "10.9.9.9", session: str = "s") -> None:
        self.client = type("C", (), {"host": peer})()
        self.session_hash = session
        self.headers = {} if forwarded is None else {"x-forwarded-for": forwarded}


def test_client_id_ignores_the_entries_a_client_writes(monkeypatch):
    from dialeval.ui.serving import client_id

    monkeypatch.setenv("SPACE_ID", "org/demo")
    monkeypatch.delenv("DIALEVAL_TRUSTED_PROXIES", raising=False)
    rotated = {client_id(_Req(f"198.51.100.{i}, 203.0.113.7")) for i in range(57)}
    assert rotated == {"203.0.113.7"}  # the last hop, appended by the Space's proxy
    assert client_id(_Req(None)) == "10.9.9.9"
    monkeypatch.setenv("DIALEVAL_TRUSTED_PROXIES", "2")
    assert client_id(_Req("1.2.3.4, 203.0.113.7, 10.0.0.5")) == "203.0.113.7"
    assert client_id(_Req("203.0.113.7")) == "10.9.9.9"  # fewer entries than trusted proxies: the socket peer
    monkeypatch.setenv("DIALEVAL_TRUSTED_PROXIES", "0")
    assert client_id(_Req("203.0.113.7")) == "10.9.9.9"
    monkeypatch.delenv("SPACE_ID")
    monkeypatch.delenv("DIALEVAL_TRUSTED_PROXIES")
    assert client_id(_Req("203.0.113.7")) == "10.9.9.9"  # no proxy is trusted off a Space


def test_rotating_x_forwarded_for_does_not_lift_the_limit(monkeypatch):
    import asyncio
    import threading

    from dialeval.ui.inputs import InputError
    from dialeval.ui.serving import RequestGate

    monkeypatch.setenv("SPACE_ID", "org/demo")
    gate = RequestGate(concurrency=2, max_jobs_per_client=2)
    release = threading.Event()

    async def scenario():
        held = [asyncio.create_task(gate.run(release.wait, 10, request=_Req(f"1.1.1.{i}, 203.0.113.7", session=f"s{i}")))
                for i in range(2)]
        await asyncio.sleep(0.3)
        with pytest.raises(InputError, match="already has 2 requests waiting or running"):
            await gate.run(lambda: None, request=_Req("9.9.9.9, 203.0.113.7", session="s3"))
        release.set()
        assert await asyncio.gather(*held) == [True, True]

    asyncio.run(scenario())


# ------------------------------------------------------------------- 36.7 unbounded options and odd outputs

@pytest.mark.parametrize("command", [["meta-eval", "fed", "--metric", "column:x"], ["leaderboard", "--out", "{t}/lb"]])
def test_resamples_has_a_declared_maximum(shared_data, tmp_path, capsys, command):
    from dialeval.cli import main

    argv = [c.format(t=tmp_path) for c in command] + ["--data-dir", str(shared_data / "fed"), "--resamples",
                                                      "100000000"]
    assert "--resamples must be an integer from 100 to 100,000" in _one_error(capsys, main(argv))
    assert not (tmp_path / "lb").exists()


def _nan_copy(src, dst):
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dst)
    weights = dst / "model.safetensors"
    tensors = load_file(weights)
    first = next(k for k, v in tensors.items() if v.is_floating_point())
    tensors[first] = tensors[first].clone().fill_(float("nan"))
    save_file(tensors, weights, metadata={"format": "pt"})
    return dst


def test_non_finite_model_weights_are_refused(tiny_gpt2, tmp_path):
    from dialeval.models.encoders import get_encoder
    from dialeval.models.runtime import ModelNotAvailableError

    bad = _nan_copy(tiny_gpt2, tmp_path / "nan")
    with pytest.raises(ModelNotAvailableError, match="NaN or infinite") as info:
        get_encoder(str(bad), backend="torch")
    assert "\n" not in str(info.value)


def test_json_output_is_strict_json(tmp_path, capsys):
    from dialeval.cli import main
    from dialeval.io.files import atomic_write_json, json_text

    assert json_text({"a": float("nan"), "b": [float("inf"), 1.5]}, indent=None) == '{"a": null, "b": [null, 1.5]}'
    atomic_write_json(tmp_path / "x.json", {"v": float("-inf")})
    assert (tmp_path / "x.json").read_text(encoding="utf-8") == '{\n  "v": null\n}\n'
    texts = _text_file(tmp_path)
    assert main(["score", "--metric", "distinct_n", "--input", str(texts), "--json"]) == 0
    import json

    def refuse(name):
        raise AssertionError(f"bare {name} in --json output")

    assert json.loads(capsys.readouterr().out, parse_constant=refuse)["distinct_n"]["distinct_1"] == 1.0


def test_check_model_refuses_a_huge_model_name():
    from dialeval.ui.inputs import InputError
    from dialeval.ui.scoring import availability
    from dialeval.ui.serving import ServerPolicy

    for policy in (ServerPolicy(public=False, allow_local_models=True), ServerPolicy(public=True)):
        with pytest.raises(InputError, match="holds 100,000 characters"):
            policy.check_model("nli_diversity", "x" * 100_000)
    ok, reason = availability("nli_diversity", "a/" + "b" * 300)  # one folder name over 255 bytes
    assert not ok and "255 bytes per folder name" in reason


@pytest.mark.parametrize(("host", "message"), [("not a host", "neither an IP address nor a host name"),
                                              ("192.0.2.1", "is not an address of this machine")])
def test_demo_bad_host_exits_at_once(capsys, host, message):
    import time

    from dialeval.cli import main

    start = time.monotonic()
    line = _one_error(capsys, main(["demo", "--host", host]))
    assert message in line and time.monotonic() - start < 10


@pytest.mark.parametrize("cache", ["/proc/self", "/sys/kernel", "/dev/shm/../null"])
def test_cache_dir_in_a_pseudo_filesystem_is_refused(shared_data, tmp_path, capsys, cache):
    from dialeval.cli import main

    line = _one_error(capsys, main(["datasets", "export", "fed", "--data-dir", str(shared_data / "fed"), "--out",
                                    str(tmp_path / "o"), "--cache-dir", cache]))
    assert "kernel pseudo-filesystem" in line


# ------------------------------------- 33.9 a full disk is one line and leaves no partial output (ENOSPC simulated by
# monkeypatching the write call, which is portable; hostile/tally.py uses a real 1 MB tmpfs where it can)

def _enospc(*args, **kwargs):
    import errno

    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("command", ["export", "meta-eval"])
def test_full_disk_while_writing_the_arrow_cache_is_one_line(shared_data, tmp_path, capsys, monkeypatch, command):
    from datasets.arrow_writer import ArrowWriter

    from dialeval.cli import main

    monkeypatch.setattr(ArrowWriter, "write", _enospc)
    if command == "export":
        argv = ["datasets", "export", "dailydialog", "--data-dir", str(shared_data / "dailydialog"), "--out",
                str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"), "--allow-duplicates"]
    else:
        argv = ["meta-eval", "fed", "--metric", "column:x", "--data-dir", str(shared_data / "fed"), "--cache-dir",
                str(tmp_path / "c")]
    line = _one_error(capsys, main(argv))
    assert "No space left on device" in line and "could not write the datasets cache" in line
    assert not (tmp_path / "o").exists()


def test_full_disk_in_the_hub_wheel_step_is_one_line(tmp_path, capsys, monkeypatch):
    import subprocess

    from dialeval.cli import main

    def pip(argv, **kwargs):
        return subprocess.CompletedProcess(argv, 1, "", "ERROR: Could not build wheels\nOSError: [Errno 28] No space "
                                                        "left on device: '/tmp/x'\n")

    monkeypatch.setattr(subprocess, "run", pip)
    line = _one_error(capsys, main(["hub", "build", "--org", "a", "--out", str(tmp_path / "o"), "--no-datasets",
                                    "--only", "distinct_n"]))
    assert "building the wheel failed: no space left on device" in line
    assert not (tmp_path / "o").exists()


def test_full_disk_during_fit_space_leaves_no_folder(tiny_gpt2, tmp_path, capsys, monkeypatch):
    import dialeval.semantic.space as space_module
    from dialeval.cli import main
    from dialeval.testing import TRAINING_TEXTS

    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(TRAINING_TEXTS), encoding="utf-8")
    real = space_module.atomic_write_json
    monkeypatch.setattr(space_module, "atomic_write_json", lambda *a, **k: _enospc())  # space.json, written last
    line = _one_error(capsys, main(["fit-space", "--reference", str(ref), "--encoder", str(tiny_gpt2), "--k", "4",
                                    "--out", str(tmp_path / "sp")]))
    assert "No space left on device" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.txt"]  # neither sp nor a temporary sibling
    monkeypatch.setattr(space_module, "atomic_write_json", real)


def test_full_disk_during_leaderboard_removes_the_folder_it_created(shared_data, tmp_path, capsys, monkeypatch):
    import dialeval.meta.leaderboard as lb
    from dialeval.cli import main

    monkeypatch.setattr(lb, "atomic_write_json", _enospc)
    line = _one_error(capsys, main(["leaderboard", "--data-dir", str(shared_data), "--dataset", "contest",
                                    "--metric", "distinct_n", "--resamples", "100", "--max-rows", "contest=20",
                                    "--out", str(tmp_path / "lb")]))
    assert "No space left on device" in line and not (tmp_path / "lb").exists()
