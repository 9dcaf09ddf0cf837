"""The Ray engine's edges with the outside (issue 35): per-item outputs under a URI that carries options in its
query string (moto S3 on 127.0.0.1), the workers' runtime_env (bounded setup, one line when it fails, unknown
keys refused) and what ``--overwrite`` replaces in an output folder."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid

from ray_helpers import LOOPBACK, cli, moto_s3, printed_json

os.environ.update(LOOPBACK)  # before ray is imported

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

import dialeval  # noqa: E402
from dialeval.distributed import engine  # noqa: E402

pytestmark = pytest.mark.slow
SPEAKERS = {"pred": [["A", "B"], ["A", "B"], ["C"]], "gold": [["A", "A"], ["A", "B"], ["C"]]}


@pytest.fixture()
def s3(monkeypatch):
    yield from moto_s3(monkeypatch)


@pytest.fixture()
def speakers(tmp_path):
    src = tmp_path / "spk.parquet"
    pq.write_table(pa.table({"id": [0, 1, 2], **SPEAKERS}), src)
    return src


def spk_args(cluster: str, src: object, *more: str) -> list[str]:
    return ["score", "--engine", "ray", "--address", cluster, "--input", str(src), "--metric", "dialspk",
            "--column", "predictions=pred", "--column", "references=gold", "--json", *more]


def test_child_uri_joins_the_path_before_the_query():
    uri = "s3://bucket/out/?endpoint_override=127.0.0.1:9000&scheme=http"
    assert engine.child_uri(uri, "dialspk") == "s3://bucket/out/dialspk?endpoint_override=127.0.0.1:9000&scheme=http"
    assert engine.child_uri("s3://bucket/out", "x") == "s3://bucket/out/x"
    assert engine.child_uri("/tmp/out/", "x") == "/tmp/out/x"


def test_per_item_output_under_a_uri_with_a_query_string(cluster, s3, speakers, monkeypatch):
    """`--output s3://bucket/out/?endpoint_override=HOST&scheme=http`: the per-item folder and results.json land
    under the prefix, read through the options in the query (no AWS_ENDPOINT_URL in the CLI's environment)."""
    import pyarrow.fs as pafs

    fs, env = s3
    endpoint = env["AWS_ENDPOINT_URL"].removeprefix("http://")
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # only the URI's query says where the store is
    prefix = f"bench/{uuid.uuid4().hex}/out"  # moto keeps one in-process store for all its servers
    out = f"s3://{prefix}/?endpoint_override={endpoint}&scheme=http"
    keys = {k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}  # the workers write the rows
    done = cli(*spk_args(cluster, speakers, "--output", out, "--runtime-env", json.dumps({"env_vars": keys})))
    assert done.returncode == 0, done.stderr
    want = dialeval.load("dialspk").compute(predictions=SPEAKERS["pred"], references=SPEAKERS["gold"])
    got = printed_json(done.stdout)["dialspk"]
    assert got["output"] == f"s3://{prefix}/dialspk?endpoint_override={endpoint}&scheme=http"
    assert got["dac"] == want["dac"] == 4 / 5 and got["sac"] == want["sac"] == 2 / 3
    names = sorted(i.path for i in fs.get_file_info(pafs.FileSelector(prefix, recursive=True)) if i.is_file)
    assert f"{prefix}/results.json" in names and any(n.startswith(f"{prefix}/dialspk/") for n in names), names
    rows = pq.read_table(f"{prefix}/dialspk", filesystem=fs).sort_by("id")
    assert rows.column("dialspk").to_pylist() == want["story_scores"] == [0.5, 1.0, 1.0]


class Blackhole:
    """A TCP server on 127.0.0.1 that accepts connections and answers nothing (``hang``) or an HTTP 404; its
    thread and sockets stop with :meth:`close`."""

    def __init__(self, hang: bool) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.hang, self.held, self.stopped = hang, [], threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            if self.hang:
                self.held.append(conn)
            else:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(5)
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.mark.parametrize("hang", [True, False], ids=["setup-hangs", "setup-fails"])
def test_runtime_env_setup_is_bounded_and_fails_in_one_line(cluster, speakers, hang):
    """A working_dir the workers cannot fetch (a server that never answers / answers 404): the job ends within
    --setup-timeout with one line naming the runtime_env, instead of waiting on Ray Data's tasks in silence."""
    server = Blackhole(hang)
    try:
        env = json.dumps({"working_dir": f"http://127.0.0.1:{server.port}/code.zip"})
        start = time.monotonic()
        done = cli(*spk_args(cluster, speakers, "--runtime-env", env, "--setup-timeout", "8"), timeout=240)
        took = time.monotonic() - start
    finally:
        server.close()
    assert done.returncode == 2 and done.stdout == "", done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    if hang:
        assert "runtime_env was not set up" in lines[0] and "within 8 s" in lines[0] and "--setup-timeout" in lines[0]
    else:
        assert "runtime_env could not be set up" in lines[0] and "404" in lines[0], lines[0]
    assert took < 120, took


def test_unknown_runtime_env_key_is_refused_before_ray(cluster, speakers):
    done = cli(*spk_args(cluster, speakers, "--runtime-env", '{"pips": ["dialeval"]}'))
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("dialeval score: error: --runtime-env key 'pips' is not a Ray runtime_env field; use "
                           "one of ['conda', 'config', 'container', 'env_vars', 'excludes', 'image_uri', "
                           "'java_jars', 'pip', 'py_executable', 'py_modules', 'uv', 'worker_process_setup_hook', "
                           "'working_dir'].")


def test_overwrite_replaces_what_the_command_writes_and_keeps_the_rest(cluster, speakers, tmp_path):
    """`--overwrite` into a folder holding other files: OUTPUT/dialspk/ and results.json are replaced, a file
    dialeval did not write stays, and the help says exactly that."""
    out = tmp_path / "out"
    (out / "dialspk").mkdir(parents=True)
    (out / "dialspk" / "old.parquet").write_bytes(b"not parquet")  # an earlier run's folder: replaced
    (out / "results.json").write_text("{}", encoding="utf-8")
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    refused = cli(*spk_args(cluster, speakers, "--output", str(out)))
    assert refused.returncode == 2 and "is not empty" in refused.stderr and "--overwrite" in refused.stderr
    done = cli(*spk_args(cluster, speakers, "--output", str(out), "--overwrite"))
    assert done.returncode == 0, done.stderr
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert json.loads((out / "results.json").read_text(encoding="utf-8")) == printed_json(done.stdout)
    assert "old.parquet" not in {p.name for p in (out / "dialspk").iterdir()}
    assert pq.read_table(out / "dialspk").sort_by("id").column("dialspk").to_pylist() == [0.5, 1.0, 1.0]
    helped = cli("score", "--help")
    assert "replaces OUTPUT/<metric>/ and OUTPUT/results.json, keeps every other file there" in \
        " ".join(helped.stdout.split())


def test_one_process_and_ray_take_the_same_inputs_with_the_same_defaults(cluster, tmp_path):
    """A text file (one response per line, split on newlines only), a JSONL file whose only text field is
    ``response`` and a JSON array of the same records: ``--engine ray`` reads them as one process does, and gives
    the same numbers."""
    lines = ["I don't know .", "I don't know either .", "Sure , let's go\u2028now !", "I don't know ."]
    txt = tmp_path / "r.txt"
    txt.write_text("\n".join(lines) + "\n", encoding="utf-8")
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("".join(json.dumps({"n": i, "response": t}) + "\n" for i, t in enumerate(lines)), encoding="utf-8")
    array = tmp_path / "r.json"
    array.write_text(json.dumps([{"n": i, "response": t} for i, t in enumerate(lines)]), encoding="utf-8")
    for src in (txt, jsonl, array):
        local = cli("score", "--input", str(src), "--metric", "distinct_n", "--json")
        assert local.returncode == 0, local.stderr
        ray = cli("score", "--engine", "ray", "--address", cluster, "--input", str(src), "--metric", "distinct_n",
                  "--json")
        assert ray.returncode == 0, ray.stderr[-2000:]
        assert printed_json(ray.stdout) == printed_json(local.stdout), src.name
    # four responses (the U+2028 splits words, not the line) of 4, 5, 6 and 4 tokens: 19 unigrams, 11 distinct
    assert printed_json(local.stdout)["distinct_n"]["distinct_1"] == pytest.approx(11 / 19)
