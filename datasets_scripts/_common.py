"""Shared pieces of the dataset builders: field type checks with errors naming the file and line, skipped-row
accounting, and locating input files under ``data_dir``. Reading files (JSON, JSON Lines, CSV limits, UTF-8
and surrogate errors, :class:`~dialeval.io.readers.MalformedDataError`) is :mod:`dialeval.io.readers`'s, the one reader stack."""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import datasets

from dialeval.io.readers import MalformedDataError, not_utf8, read_csv_stream
from dialeval.meta.sources import DatasetDeclaration

logger = logging.getLogger("dialeval.datasets")

#: Where the real corpora live beside a source checkout (``../shared/data`` from the repo root).
DATA_ENV = "DIALEVAL_DATA_DIR"


def parse_float(value: Any, field: str, loc: str, *, allow_empty: bool = False) -> float | None:
    """A CSV cell as a finite float (``None`` for an empty cell when ``allow_empty``)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if allow_empty:
            return None
        raise MalformedDataError(f"{loc}: column {field!r} is empty; a number is required.")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise MalformedDataError(f"{loc}: column {field!r} is {value!r:.40}, not a number.") from None
    if not math.isfinite(out):
        raise MalformedDataError(f"{loc}: column {field!r} is {value!r}, not a finite number.")
    return out


def report_skipped(source: str | os.PathLike, skipped: dict[str, int], total: int) -> None:
    """Log how many rows were skipped and why (nothing is dropped silently)."""
    n = sum(skipped.values())
    if n:
        reasons = ", ".join(f"{count} {reason}" for reason, count in skipped.items() if count)
        logger.warning("%s: skipped %d of %d rows (%s).", source, n, total, reasons)


def resolve_data_dir(data_dir: str | os.PathLike | None, dataset: str) -> Path:
    """The folder of ``dataset``'s original files: ``data_dir/<dataset>`` when ``data_dir`` holds that folder (the
    folder above the datasets, as ``dialeval leaderboard --data-dir`` takes it), else ``data_dir`` itself (the
    dataset's own folder); without ``data_dir``, ``$DIALEVAL_DATA_DIR/<dataset>``. A missing folder is an
    actionable error."""
    if data_dir is not None and dataset and (Path(data_dir).expanduser() / dataset).is_dir():
        return Path(data_dir).expanduser() / dataset
    if data_dir is None:
        root = os.environ.get(DATA_ENV)
        if not root:
            raise ValueError(
                f"no data_dir given for {dataset!r}: pass data_dir=<folder holding the original files> "
                f"(see the {dataset} dataset card) or set ${DATA_ENV} to the folder that holds {dataset}/."
            )
        data_dir = Path(root) / dataset
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"data_dir {str(path)!r} for {dataset!r} is not a directory.")
    return path


def find_file(data_dir: Path, candidates: Sequence[str], what: str) -> Path:
    """The first of ``candidates`` (paths relative to ``data_dir``) that exists."""
    for rel in candidates:
        p = data_dir / rel
        if p.is_file():
            return p
    raise FileNotFoundError(f"{what}: none of {list(candidates)} exists under {str(data_dir)!r}.")


def fingerprint_dir(path: str | os.PathLike) -> str:
    """A cache key for a data folder: every file's relative path, size and mtime (edits rebuild the cache)."""
    import hashlib

    h = hashlib.sha256()
    root = Path(path)
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(root)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


# Features shared by several builders.
STRINGS = datasets.List(datasets.Value("string"))


# -- human-judged quality datasets: one record shape for every builder ------------------------------------
#: The answer a rater gives when a quality does not apply ("N/A", "N/A (…)"): kept as ``None``.
NA_PREFIX = "N/A"


def quality_features(qualities: Sequence[str], *, turn: bool) -> datasets.Features:
    """Features of a quality record: ``id``, ``context`` turns (``speakers`` beside them where the source
    names them, else empty), ``response`` (turn level only), optional ``reference``/``knowledge``/``system``
    (``None`` when the source has none), every quality's per-annotator scores and their mean."""
    text = datasets.Value("string")
    feats: dict[str, Any] = {"id": text, "context": STRINGS, "speakers": STRINGS}
    if turn:
        feats["response"] = text
    feats.update(reference=text, knowledge=text, system=text)
    feats["annotations"] = {q: datasets.List(datasets.Value("float64")) for q in qualities}
    feats["annotation_means"] = {q: datasets.Value("float64") for q in qualities}
    return datasets.Features(feats)


def parse_score(value: Any, field: str, loc: str) -> float | None:
    """One rater's score: a finite number, a numeric string (GRADE/CSV cells), or ``"N/A…"`` (→ ``None``)."""
    if isinstance(value, str) and value.strip().startswith(NA_PREFIX):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise MalformedDataError(f"{loc}: {field} is {value!r:.40}; expected a number or 'N/A'.")
    if isinstance(value, int) and abs(value) > 2 ** 53:
        raise MalformedDataError(f"{loc}: {field} is an integer of {len(str(abs(value)))} digits, not a score.")
    if isinstance(value, str) and not value.strip():
        raise MalformedDataError(f"{loc}: {field} is empty; a number is required.")
    try:
        out = float(value)
    except ValueError:
        raise MalformedDataError(f"{loc}: {field} is {value!r:.40}, not a number.") from None
    if not math.isfinite(out):
        raise MalformedDataError(f"{loc}: {field} is {value!r:.40}, not a finite number.")
    return out


def parse_scores(values: Any, field: str, loc: str) -> list[float | None]:
    """A non-empty list of rater scores (see :func:`parse_score`)."""
    if not isinstance(values, list) or not values:
        raise MalformedDataError(f"{loc}: {field} must be a non-empty list of scores, got {values!r:.40}.")
    return [parse_score(v, f"{field}[{i}]", loc) for i, v in enumerate(values)]


def mean_score(values: Sequence[float | None]) -> float | None:
    """Mean of the numeric scores (``None`` answers left out); ``None`` when there are none."""
    nums = [v for v in values if v is not None]
    return math.fsum(nums) / len(nums) if nums else None


def json_objects(data: Any, where_: str | os.PathLike, unit: str, what: str = "") -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(index, location, object)`` for each entry of a parsed JSON array, each required to be an object;
    ``where_`` is the file (or the enclosing record), ``unit`` names one entry in errors (``item 3 (0-based)``)."""
    if not isinstance(data, list):
        raise MalformedDataError(f"{where_}: expected a JSON array{' of ' + what if what else ''}, "
                                 f"got {type(data).__name__}.")
    for i, obj in enumerate(data):
        loc = f"{where_}, {unit} {i}" + (" (0-based)" if what else "")
        if not isinstance(obj, dict):
            raise MalformedDataError(f"{loc}: expected an object, got {type(obj).__name__}.")
        yield i, loc, obj


def quality_row(row_id: str, context: list[str], annotations: dict[str, list[float | None]], *,
                response: str | None = None, speakers: list[str] | None = None, reference: str | None = None,
                knowledge: str | None = None, system: str | None = None) -> dict[str, Any]:
    """A record of :func:`quality_features` (``response=None``: a dialogue-level record)."""
    row: dict[str, Any] = {"id": row_id, "context": context, "speakers": speakers or []}
    if response is not None:
        row["response"] = response
    row.update(reference=reference, knowledge=knowledge, system=system, annotations=annotations,
               annotation_means={q: mean_score(v) for q, v in annotations.items()})
    return row


def rater_lists(ratings: Sequence[dict[str, Any]], qualities: Sequence[str], loc: str) -> dict[str, list[float | None]]:
    """Per-quality score lists from one dict per rater (DSTC9 rows, ConTurE ``dialog_ratings``); every rater
    must rate every quality."""
    out: dict[str, list[float | None]] = {q: [] for q in qualities}
    for i, rating in enumerate(ratings):
        if not isinstance(rating, dict):
            raise MalformedDataError(f"{loc}: rating {i} must be an object, got {type(rating).__name__}.")
        missing = [q for q in qualities if q not in rating]
        if missing:
            raise MalformedDataError(f"{loc}: rating {i} misses quality field(s) {missing}.")
        for q in qualities:
            out[q].append(parse_score(rating[q], f"rating {i} {q!r}", loc))
    return out


def quality_builder_info(description: str, qualities: Sequence[str], *, turn: bool, citation: str, homepage: str,
                         license: str) -> datasets.DatasetInfo:
    """The ``DatasetInfo`` of a quality builder."""
    return datasets.DatasetInfo(description=description, features=quality_features(qualities, turn=turn),
                                citation=citation, homepage=homepage, license=license)


def read_csv_table(path: Path, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Rows of a CSV file through :func:`dialeval.io.readers.read_csv_stream`; ``columns`` names the columns of a file
    without a header row (its errors still name the file's own line). Reader errors become
    :class:`MalformedDataError` (one line, surfaced by ``load``)."""
    def lines(f: Any) -> Any:
        if columns is not None:
            yield ",".join(columns) + "\r\n"
        yield from f

    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return read_csv_stream(lines(f), str(path))
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc) from None
    except MalformedDataError:
        raise
    except ValueError as exc:
        msg = str(exc)
        if columns is not None:  # the supplied header is line 1 of the stream, not of the file
            msg = re.sub(r", line (\d+)", lambda m: f", line {int(m.group(1)) - 1}", msg, count=1)
        raise MalformedDataError(msg) from None


class QualityBuilder(datasets.GeneratorBasedBuilder):
    """The shared builder of a human-judged quality dataset (one ``test`` split of :func:`quality_features`
    records per config). A subclass sets ``FOLDER`` (its folder under ``$DIALEVAL_DATA_DIR``), ``FILES``
    (config → candidate file names), ``QUALITIES`` and ``LEVELS`` (config → qualities, ``turn``/``dialog``),
    ``DESCRIPTION``, ``CITATION``, ``HOMEPAGE``, ``LICENSE`` and ``records(paths)``."""

    VERSION = datasets.Version("1.0.0")
    FOLDER = ""
    FILES: dict[str, Sequence[str]] = {}
    QUALITIES: dict[str, Sequence[str]] = {}
    LEVELS: dict[str, str] = {}
    DESCRIPTION = CITATION = HOMEPAGE = LICENSE = ""

    def qualities(self) -> list[str]:
        return list(self.QUALITIES[self.config.name])

    def _info(self) -> datasets.DatasetInfo:
        return quality_builder_info(self.DESCRIPTION, self.qualities(), turn=self.LEVELS[self.config.name] == "turn",
                                    citation=self.CITATION, homepage=self.HOMEPAGE, license=self.LICENSE)

    def input_paths(self) -> list[Path]:
        """The source files of this config: the first existing candidate of each ``FILES`` entry (a list of
        alternatives, or a glob pattern ``*`` that must match at least one file)."""
        root = resolve_data_dir(self.config.data_dir, self.FOLDER)
        paths = []
        for names in self.FILES[self.config.name]:
            if "*" in names:
                found = sorted(root.glob(names), key=lambda p: (len(p.name), p.name))
                if not found:
                    raise FileNotFoundError(f"{self.FOLDER}: no file matches {names!r} under {str(root)!r}.")
                paths += found
            else:
                paths.append(find_file(root, [names], f"{self.FOLDER} {self.config.name}"))
        return paths

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return [datasets.SplitGenerator(name="test", gen_kwargs={"paths": self.input_paths()})]

    def records(self, paths: list[Path]) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _generate_examples(self, paths: list[Path]) -> Any:
        for row in self.records(paths):
            yield row["id"], row


def quality_configs(cls_levels: dict[str, str], version: str = "1.0.0") -> list[datasets.BuilderConfig]:
    """One ``BuilderConfig`` per config name of ``LEVELS``."""
    return [datasets.BuilderConfig(name=name, version=datasets.Version(version), description=f"{level} level")
            for name, level in cls_levels.items()]


#: Rows per cached chunk of a rated dataset's scores: an interrupted leaderboard run loses at most one chunk.
CHUNK_ROWS = 200


def rated_dataset(name: str, builder_class: type[QualityBuilder], overall: str | dict[str, str], **fields: Any) -> DatasetDeclaration:
    """The meta-evaluation declaration of a human-judged quality dataset built by ``builder``: its levels and
    folder from ``builder_class``, ``overall`` (one quality for every config, or config → quality), the ``system``
    field, scores cached per :data:`CHUNK_ROWS` rows; ``fields`` add or override any declaration field."""
    levels = dict(builder_class.LEVELS)
    per_config = overall if isinstance(overall, dict) else {c: overall for c in levels}
    base: dict[str, Any] = {"description": "a rated response or dialogue (human quality scores, per-quality correlations)",
                            "system_field": "system", "chunk_rows": CHUNK_ROWS, "folder": builder_class.FOLDER or name}
    return DatasetDeclaration(name=name, protocol="rated", levels=levels, overall=per_config, **{**base, **fields})
