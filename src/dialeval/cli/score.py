"""``dialeval score``: any metric over a file, a Parquet dataset, an export folder or stdin; ``--engine ray``
runs it on a Ray cluster (``dialeval[distributed]``) with the same numbers and signatures.

Inputs reach a metric through column mapping: ``--column ROLE=COLUMN`` where ROLE is a ``compute`` input
(``predictions``, ``references``, ``contexts``, ``dialogues``, ``candidates``); by default each role reads the
column of the same name (``--field NAME`` is short for ``--column predictions=NAME``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from dialeval import registry
from dialeval.extras import needs_extras
from dialeval.io.files import atomic_write_json, check_output_path, is_stdout, json_text
from dialeval.io.readers import check_duplicate_rows, read_rows
from dialeval.io.validation import ResultNote, inputs_checked


def register(sub: Any) -> None:
    decls = registry.declarations()
    listing = "; ".join(f"{d.name}: {d.summary} [{d.inputs}]" for d in decls.values())
    p = sub.add_parser("score", help="score a file or dataset with one or more metrics (optionally on Ray)",
                       description=f"Metrics: {listing}. Inputs are mapped from columns with --column ROLE=COLUMN.")
    p.add_argument("--metric", action="append", required=True, choices=list(decls), metavar="METRIC",
                   help=f"metric name (repeatable): {', '.join(decls)}")
    p.add_argument("--input", required=True,
                   help="Parquet file or folder, a `dialeval datasets export` folder, JSONL, CSV, text, or - (stdin)")
    p.add_argument("--column", action="append", default=[], metavar="ROLE=COLUMN",
                   help="input role → column (repeatable): predictions, references, contexts, dialogues, candidates")
    p.add_argument("--field", default=None, help="record field holding the response (= --column predictions=FIELD)")
    p.add_argument("--metric-config", default=None, help="metric config (one of the metric's declared configs) "
                                                         "(default: turn when a contexts column is mapped)")
    p.add_argument("--dataset-config", default=None, help="config folder of an export folder input")
    p.add_argument("--split", default=None, help="split of an export folder input (e.g. test)")
    p.add_argument("--tokenizer", default=None, help="tokenizer for lexical metrics: casual, whitespace, char, tevet")
    p.add_argument("--metric-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="option for the metrics that know it (repeatable), e.g. space=DIR or model=PATH")
    p.add_argument("--output", default=None,
                   help="results JSON file (- writes it to stdout); with --engine ray a folder or URI (s3://, gs://, "
                        "file://): per-item Parquet in OUTPUT/<metric>/ and the results in OUTPUT/results.json")
    p.add_argument("--allow-duplicates", action="store_true",
                   help="score repeated ids and records of two or more fields that repeat another exactly (refused by default: they would count twice; plain responses may repeat)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ray = p.add_argument_group("Ray engine (pip install 'dialeval[distributed]')")
    ray.add_argument("--engine", choices=("local", "ray"), default="local", help="where to run (default: local)")
    ray.add_argument("--address", default=None, help="Ray cluster: auto, HOST:PORT or ray://HOST:10001 "
                                                     "(default: $RAY_ADDRESS, else a new local cluster)")
    ray.add_argument("--connect-timeout", type=float, default=30.0,
                     help="seconds to wait for the cluster (and for a lost one) before failing (default: 30)")
    ray.add_argument("--runtime-env", default=None, metavar="JSON",
                     help='Ray runtime_env for the workers, JSON or a .json file, e.g. \'{"pip": ["dialeval"]}\'')
    ray.add_argument("--setup-timeout", type=float, default=600.0,
                     help="seconds the --runtime-env may take to set up on the workers (pip, conda) before the job "
                          "fails in one line (default: 600, Ray's own)")
    ray.add_argument("--concurrency", type=int, default=None, help="model actors (default: one per GPU, else CPUs/2)")
    ray.add_argument("--rows-per-batch", type=int, default=None,
                     help="rows per Ray batch (default: from the data, about two chunks per CPU for corpus metrics)")
    ray.add_argument("--overwrite", action="store_true",
                     help="write into a non-empty --output folder/prefix: replaces OUTPUT/<metric>/ and "
                          "OUTPUT/results.json, keeps every other file there")
    ray.add_argument("--actor-info-dir", default=None, metavar="DIR",
                     help="each model actor writes <pid>.json (host, device, batches done) here, for operators")
    ray.add_argument("--partition-by", action="append", default=[], metavar="COLUMN",
                     help="write per-item outputs in hive-style COLUMN=VALUE/ folders (repeatable)")
    p.set_defaults(func=run)


def format_table(results: dict[str, dict[str, Any]]) -> str:
    rows = [("metric", "key", "value")]
    for metric, res in results.items():
        for key, value in res.items():
            if isinstance(value, float):
                rows.append((metric, key, f"{value:.6f}"))
            elif key in ("signature", "output"):
                rows.append((metric, key, str(value)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _options(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Per metric, the ``--metric-arg`` (and ``--tokenizer``) options it knows; an option no metric knows is an error."""
    from dialeval.registry import parse_metric_args

    extra = parse_metric_args(args.metric_arg)
    decls = {name: registry.get(name) for name in args.metric}
    known = {name: set(d.option_defaults()) for name, d in decls.items()}
    unused = sorted(set(extra) - set().union(*known.values()))
    if unused:
        raise ValueError(f"--metric-arg {unused} is not an option of {args.metric}.")
    out = {}
    for name in args.metric:
        opts = {k: v for k, v in extra.items() if k in known[name]}
        if args.tokenizer and "tokenizer" in known[name]:
            opts["tokenizer"] = args.tokenizer
        registry.check_options(decls[name], opts)  # ranges before any reading (n=10**22 answers at once)
        out[name] = opts
    return out


def _columns(args: argparse.Namespace) -> dict[str, str]:
    from dialeval.distributed.columns import parse_column_args

    columns = parse_column_args(args.column)
    if args.field:
        if columns.get("predictions", args.field) != args.field:
            raise ValueError("--field and --column predictions=... disagree; give one of them.")
        columns["predictions"] = args.field
    return columns


def _for_metric(columns: dict[str, str], kind: str) -> dict[str, str]:
    from dialeval.distributed.columns import ROLES

    return {r: c for r, c in columns.items() if r in {role.name for role in ROLES[kind]}}


def _check_roles(columns: dict[str, str], kinds: list[str]) -> None:
    from dialeval.distributed.columns import ROLES

    roles = {role.name for kind in kinds for role in ROLES[kind]}
    stray = sorted(set(columns) - roles)
    if stray:
        raise ValueError(f"--column {stray[0]}=... is not an input of the chosen metrics (inputs: {sorted(roles)}).")


def local_inputs(rows: list[Any], decl: registry.MetricDeclaration, kind: str, columns: dict[str, str],
                 source: str = "input") -> dict[str, Any]:
    """The ``compute`` inputs of ``decl`` from in-memory rows (records, or plain lines = responses)."""
    from dialeval.distributed.columns import (
        TURNS,
        as_texts,
        default_columns,
        describe_value,
        resolve_columns,
        schema_of_rows,
    )
    from dialeval.io.readers import check_unicode, describe, no_text_field

    if not rows:
        raise ValueError(f"{source}: no rows found (the input is empty).")
    if all(isinstance(r, str) for r in rows):
        if kind != "responses":
            raise ValueError(f"{decl.name} reads {registry.INPUT_KINDS[kind]}; a text file holds one response per "
                             "line. Give JSONL or Parquet with a column per input (see --column), or use the "
                             "Python API (dialeval.load).")
        return {"predictions": [check_unicode(r, f"{source}, record {i}") for i, r in enumerate(rows, 1)]}
    bad = next((i for i, r in enumerate(rows, 1) if not isinstance(r, dict)), None)
    if bad is not None:
        raise ValueError(f"{source}, record {bad}: expected an object or a string, got {type(rows[bad - 1]).__name__}.")
    schema = schema_of_rows(rows)
    columns = default_columns(kind, columns, schema)  # the same default as --engine ray
    if kind == "responses" and "predictions" not in columns and "predictions" not in schema:
        raise no_text_field(rows[0], f"{source}, record 1", "--field (or --column predictions=FIELD)")
    cols = resolve_columns(decl, kind, columns, schema)
    inputs: dict[str, Any] = {}
    for role, column in cols.items():
        want = describe_value(rows[0][column])
        if want == TURNS:
            rows = [{**r, column: as_texts(r.get(column))} if isinstance(r.get(column), list) else r for r in rows]
            want = describe_value(rows[0][column])
        values = []
        for i, row in enumerate(rows, 1):
            if column not in row:
                raise ValueError(f"{source}, record {i}: no field {column!r} (fields: {sorted(map(str, row))}).")
            value = row[column]
            if describe_value(value) != want:
                got = describe(value) if want == "string" else describe_value(value)
                raise ValueError(f"{source}, record {i}: field {column!r} ({role}) is {got}, not a "
                                 f"{want}; fix the record or map another column with --column.")
            values.append(check_unicode(value, f"{source}, record {i}, field {column!r}") if want == "string"
                          else value)
        inputs[role] = values
    return inputs


def run(args: argparse.Namespace) -> int:
    from dialeval.distributed.columns import default_config, input_kind

    columns = _columns(args)
    options = _options(args)
    decls = [registry.get(name) for name in args.metric]
    if args.engine == "ray":
        return run_ray(args, columns, options)
    _check_config(args.metric_config, decls)
    # before any work: not an input, not a folder or a device, writable; - is stdout
    output = check_output_path(args.output, inputs=[args.input]) if args.output else None
    rows = read_rows(args.input, config=args.dataset_config, split=args.split)
    if not args.allow_duplicates:
        check_duplicate_rows(rows, args.input)
    available = set(rows[0]) if rows and isinstance(rows[0], dict) else set()
    plans = []
    for decl in decls:
        config = args.metric_config if args.metric_config in decl.configs else default_config(decl, columns, available)
        plans.append((decl, config, input_kind(decl, config)))
    _check_roles(columns, [kind for _, _, kind in plans])
    inputs = {decl.name: local_inputs(rows, decl, kind, _for_metric(columns, kind), args.input)
              for decl, config, kind in plans}
    shared = compute_shared(inputs, options)  # lexical metrics on the same responses: one tokenization and count
    results: dict[str, dict[str, Any]] = {}
    for decl, config, _ in plans:
        results[decl.name] = shared.get(decl.name) or compute_locally(decl, config, inputs[decl.name],
                                                                      options[decl.name])
    if output is not None:
        atomic_write_json(output, results)
    if not is_stdout(output):
        print(json_text(results) if args.json else format_table(results))
    return 0


def compute_locally(decl: registry.MetricDeclaration, config: str | None, inputs: dict[str, Any],
                    options: dict[str, Any]) -> dict[str, Any]:
    """One metric in this process: its declared evaluate-free core when it has one (no ``evaluate``,
    ``datasets`` or Arrow import; the records were checked for bad Unicode as they were read), else its
    ``evaluate`` module (a plugin without ``core``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultNote)  # shown as one line below, from the result's note
        if decl.core:
            extra = {"config": config or decl.configs[0]} if len(decl.configs) > 1 else {}
            with inputs_checked(), needs_extras(decl.name):
                result = decl.core_function()(**inputs, **extra, **options)
        else:
            from dialeval.models.loading import load

            module = load(decl.name, config) if config else load(decl.name)
            result = module.compute(**inputs, **options)
    if isinstance(result, dict) and result.get("note"):
        print(f"dialeval score: note: {decl.name}: {result['note']}", file=sys.stderr)
    return result


def compute_shared(inputs: dict[str, dict[str, Any]], options: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The lexical metrics that read the same responses, computed together
    (:func:`dialeval.lexical.shared.compute_many`); ``{}`` when fewer than two can share."""
    from dialeval.lexical.shared import compute_many, shares_counts

    names = [n for n in inputs if shares_counts(n, options[n]) and set(inputs[n]) == {"predictions"}]
    names = [n for n in names if inputs[n]["predictions"] == inputs[names[0]]["predictions"]]
    if len(names) < 2:
        return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultNote)  # shown as one line below, from the result's note
        with inputs_checked():
            results = compute_many(inputs[names[0]]["predictions"], {n: options[n] for n in names})
    for name, result in results.items():
        if result.get("note"):
            print(f"dialeval score: note: {name}: {result['note']}", file=sys.stderr)
    return results


def _check_config(config: str | None, decls: list[registry.MetricDeclaration]) -> None:
    """``--metric-config`` must be a config of at least one chosen metric (the others use their default)."""
    if config is not None and not any(config in d.configs for d in decls):
        known = sorted({c for d in decls for c in d.configs})
        raise ValueError(f"--metric-config {config!r} is not a config of {[d.name for d in decls]}; choose one of "
                         f"{known}.")


def run_ray(args: argparse.Namespace, columns: dict[str, str], options: dict[str, dict[str, Any]]) -> int:
    """All metrics in one Ray driver process (:mod:`dialeval.distributed.driver`; one read, shared passes) whose
    stdout goes to stderr; its result or its one-line error comes back through a file. Per-item columns go to
    ``OUTPUT/<metric>/``."""
    from dialeval.distributed.columns import ROLES

    if args.input == "-":
        raise ValueError("--engine ray reads files every worker can open (Parquet/JSONL/CSV/text, an export folder or "
                         "a URI), not stdin; write stdin to a file first.")
    if not args.connect_timeout > 0:
        raise ValueError(f"--connect-timeout must be > 0 seconds, got {args.connect_timeout}.")
    _check_config(args.metric_config, [registry.get(name) for name in args.metric])
    _check_roles(columns, [k for name in args.metric for k in _kinds(registry.get(name))])
    metric_columns, configs = {}, {}
    for name in args.metric:
        decl = registry.get(name)
        roles = {r.name for kind in _kinds(decl) for r in ROLES[kind]}
        metric_columns[name] = {r: c for r, c in columns.items() if r in roles}
        configs[name] = args.metric_config if args.metric_config in decl.configs else None
    settings = {"address": args.address, "connect_timeout": args.connect_timeout,
                "runtime_env": _runtime_env(args.runtime_env), "concurrency": args.concurrency,
                "rows": args.rows_per_batch, "dataset_config": args.dataset_config, "split": args.split,
                "overwrite": args.overwrite, "partition_by": args.partition_by or None,
                "info_dir": args.actor_info_dir, "setup_timeout": args.setup_timeout}
    request = {"input": args.input, "metrics": options, "columns": metric_columns, "configs": configs,
               "output": args.output, "settings": settings}
    code, payload, log = _drive(request, args.connect_timeout)
    where = args.address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
    see = f" (Ray's output: {log})" if log else ""
    if payload is None:
        print(f"dialeval score: error: the Ray job on {where} ended without a result (driver exit {code}): the "
              f"cluster was lost or Ray stopped the job{see}.", file=sys.stderr)
        return 2
    if "error" in payload:
        print(f"dialeval score: error: {payload['error']}{see}", file=sys.stderr)
        return 2
    results = payload["results"]
    print(json_text(results) if args.json else format_table(results))
    return 0


def _drive(request: dict[str, Any], timeout: float) -> tuple[int, dict[str, Any] | None, str | None]:
    """Run the driver process on ``request``; ``(exit code, payload or None, log path or None)``. Its output
    (Ray's lines, progress bars) goes to this stderr when that is a terminal, else to a log file kept only
    when the job fails."""
    from dialeval.distributed.driver import RECONNECT_ENV

    with tempfile.TemporaryDirectory(prefix="dialeval-ray-") as tmp:
        request = {**request, "result": str(Path(tmp) / "result.json")}
        path = Path(tmp) / "request.json"
        path.write_text(json.dumps(request, ensure_ascii=False), encoding="utf-8")
        env = {**os.environ, RECONNECT_ENV: os.environ.get(RECONNECT_ENV, str(max(1, math.ceil(timeout))))}
        sys.stdout.flush()
        sys.stderr.flush()
        log = None if sys.stderr.isatty() else tempfile.NamedTemporaryFile(
            "wb", prefix="dialeval-ray-driver-", suffix=".log", delete=False)
        sink = log.fileno() if log is not None else sys.__stderr__.fileno()
        proc = subprocess.Popen([sys.executable, "-m", "dialeval.distributed.driver", str(path)],
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=env)
        try:
            code = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            if log is not None:
                log.close()
        result = Path(request["result"])
        payload = json.loads(result.read_text(encoding="utf-8")) if result.is_file() else None
    if log is not None and payload is not None and "error" not in payload:
        os.unlink(log.name)
        return code, payload, None
    return code, payload, None if log is None else log.name


def _runtime_env(text: str | None) -> dict[str, Any] | None:
    """``--runtime-env``: a JSON object, or the path of a .json file holding one."""
    if text is None:
        return None
    source = Path(text).read_text(encoding="utf-8") if text.endswith(".json") and Path(text).is_file() else text
    try:
        env = json.loads(source)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--runtime-env is not valid JSON ({exc.msg} at character {exc.pos}); give an object "
                         'such as \'{"pip": ["dialeval"]}\' or a .json file.') from None
    if not isinstance(env, dict):
        raise ValueError(f"--runtime-env must be a JSON object, got {type(env).__name__}.")
    return env


def _kinds(decl: registry.MetricDeclaration) -> list[str]:
    return ["turns", decl.inputs] if "turn" in decl.configs else [decl.inputs]
