"""Dataset builders for the benchmarks dialeval's metrics were validated on, and their Hub export.

``datasets`` 5 no longer runs loading scripts, so each corpus has a ``datasets.GeneratorBasedBuilder``
here, usable directly::

    builder = ContestBuilder(config_name="con_test_200_resp_gen", data_dir="../shared/data/diversity_eval")
    builder.download_and_prepare()
    ds = builder.as_dataset()

or through :func:`load`. :func:`export` writes the Hub layout (one Parquet or JSON Lines file per config and
split plus a dataset card whose YAML declares ``configs`` and ``dataset_info``) that
``datasets.load_dataset(DIR, config)`` loads offline with the same features.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import datasets

from dialeval.datasets import (
    contest,
    conture,
    dailydialog_plusplus,
    dstc9_interactive,
    dstc10,
    fed,
    grade,
    holistic,
    predictive_engagement,
    usr,
)
from dialeval.datasets._common import fingerprint_dir, resolve_data_dir
from dialeval.datasets.contest import ContestBuilder
from dialeval.datasets.conture import ContureBuilder
from dialeval.datasets.dailydialog import DailyDialogBuilder
from dialeval.datasets.dailydialog_plusplus import DailyDialogPlusPlusBuilder
from dialeval.datasets.dialstory import DialStoryBuilder
from dialeval.datasets.dstc9_interactive import Dstc9InteractiveBuilder
from dialeval.datasets.dstc10 import Dstc10Builder
from dialeval.datasets.fed import FedBuilder
from dialeval.datasets.grade import GradeBuilder
from dialeval.datasets.holistic import HolisticBuilder
from dialeval.datasets.predictive_engagement import PredictiveEngagementBuilder
from dialeval.datasets.usr import UsrPersonaChatBuilder, UsrTopicalChatBuilder
from dialeval.io.readers import MalformedDataError

__all__ = [
    "BUILDERS", "BUILTIN_DATASETS", "FILE_BUILDERS", "QUALITY_CONFIGS", "ContestBuilder", "ContureBuilder", "DailyDialogBuilder",
    "DailyDialogPlusPlusBuilder", "DialStoryBuilder", "Dstc9InteractiveBuilder", "Dstc10Builder", "FedBuilder",
    "GradeBuilder", "HolisticBuilder", "MalformedDataError", "PredictiveEngagementBuilder", "UsrPersonaChatBuilder",
    "UsrTopicalChatBuilder", "config_names", "export", "get_builder", "load", "render_card",
]

#: Dataset name → builder class.
BUILDERS: dict[str, type[datasets.GeneratorBasedBuilder]] = {
    "contest": ContestBuilder,
    "dailydialog_plusplus": DailyDialogPlusPlusBuilder,
    "fed": FedBuilder,
    "dailydialog": DailyDialogBuilder,
    "dialstory": DialStoryBuilder,
    "usr_topicalchat": UsrTopicalChatBuilder,
    "usr_personachat": UsrPersonaChatBuilder,
    "grade": GradeBuilder,
    "dstc9_interactive": Dstc9InteractiveBuilder,
    "predictive_engagement": PredictiveEngagementBuilder,
    "holistic_pang2020": HolisticBuilder,
    "conture": ContureBuilder,
    # the known files in the DSTC10 Track 5 format, each built by the one generic builder
    "dailydialog_zhao": Dstc10Builder,
    "dstc10_jsalt": Dstc10Builder,
    "dstc10_esl": Dstc10Builder,
}
#: Builders of a format rather than a corpus: they build any file in it (``data_files``, ``--file F``).
FILE_BUILDERS: dict[str, type[datasets.GeneratorBasedBuilder]] = {"contest": ContestBuilder, "dstc10": Dstc10Builder}
#: The meta-evaluation declarations of the built-in datasets (:class:`dialeval.meta.sources.DatasetDeclaration`),
#: each written in its builder module.
BUILTIN_DATASETS = (contest.DATASET, fed.DATASET, dailydialog_plusplus.DATASET, *usr.DATASETS, grade.DATASET,
                    dstc9_interactive.DATASET, predictive_engagement.DATASET, holistic.DATASET, conture.DATASET,
                    *dstc10.DATASETS)
#: Dataset name → the folder name of its original files under ``$DIALEVAL_DATA_DIR``.
DATA_FOLDERS = {"dailydialog": "dailydialog", "dialstory": "dialstory", **{d.name: d.folder for d in BUILTIN_DATASETS}}
#: Human-judged quality datasets: config → (level, the quality the leaderboard's summary row uses).
QUALITY_CONFIGS: dict[str, dict[str, tuple[str, str]]] = {
    d.name: {c: (d.levels[c], d.overall[c]) for c in d.levels} for d in BUILTIN_DATASETS if d.protocol == "rated"}


def _builder_class(name: str) -> type[datasets.GeneratorBasedBuilder]:
    known = {**BUILDERS, **FILE_BUILDERS}
    if not isinstance(name, str) or name not in known:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(known)}.")
    return known[name]


def config_names(name: str) -> list[str]:
    """The configs of dataset ``name`` (the first is its default)."""
    cls = _builder_class(name)
    names = [c.name for c in cls.BUILDER_CONFIGS]
    default = cls.DEFAULT_CONFIG_NAME
    return [default] + [n for n in names if n != default] if default in names else names


def get_builder(name: str, config: str | None = None, *, data_dir: str | os.PathLike | None = None,
                cache_dir: str | os.PathLike | None = None, data_files: Any = None) -> datasets.GeneratorBasedBuilder:
    """The builder of ``name``/``config`` reading ``data_dir`` (or ``$DIALEVAL_DATA_DIR/<folder>``).

    Its cache key includes a fingerprint of the input files, so editing them rebuilds the cache.
    """
    cls = _builder_class(name)
    if config is not None and config not in config_names(name):
        raise ValueError(f"unknown config {config!r} for {name!r}; choose one of {config_names(name)}.")
    kwargs: dict[str, Any] = {"config_name": config, "cache_dir": str(cache_dir) if cache_dir else None}
    if data_files is not None:
        if name not in FILE_BUILDERS:
            raise ValueError(f"data_files (--file) is only supported for {sorted(FILE_BUILDERS)} (any file in their "
                             f"format); pass data_dir=<folder> for {name!r}.")
        kwargs["data_files"] = data_files
        files = [data_files] if isinstance(data_files, (str, os.PathLike)) else (
            [f for v in data_files.values() for f in ([v] if isinstance(v, (str, os.PathLike)) else v)]
            if isinstance(data_files, dict) else list(data_files))
        stats = [(str(f), os.stat(f).st_size, os.stat(f).st_mtime_ns) for f in files]
        kwargs["hash"] = hashlib.sha256(repr(stats).encode()).hexdigest()[:16]
    elif name not in DATA_FOLDERS and data_dir is None:
        raise ValueError(f"{name!r} builds a file in its format: pass data_files=FILE (--file FILE).")
    else:
        root = resolve_data_dir(data_dir, DATA_FOLDERS.get(name, name))
        kwargs["data_dir"] = str(root.resolve())
        kwargs["hash"] = fingerprint_dir(root)
    return cls(**kwargs)


#: Columns that identify a row of each dataset (together): a repeated identity is refused by :func:`load`.
#: A conTest ``sample_id`` names a context, shared by its response sets (one per label), so a conTest row is
#: identified by the id, the label and the responses together.
ID_COLUMNS = {"contest": ("sample_id", "label_value", "responses"), "dailydialog_plusplus": ("id",), "fed": ("id",),
              "dailydialog": ("dialogue_id", "turn"), "dialstory": ("id",),
              **{name: ("id",) for name in QUALITY_CONFIGS if name != "fed"}, "dstc10": ("id",)}


def duplicated_ids(name: str, ds: datasets.DatasetDict) -> dict[str, list[Any]]:
    """``{split: [first id column of each repeated row identity]}`` (empty when every row is unique)."""
    cols = ID_COLUMNS.get(name, ())
    out: dict[str, list[Any]] = {}
    for split, part in ds.items():
        if not cols or any(c not in part.column_names for c in cols):
            continue
        keys = [tuple(tuple(v) if isinstance(v, list) else v for v in key) for key in zip(*(part[c] for c in cols))]
        seen: set[Any] = set()
        repeated = list(dict.fromkeys(k for k in keys if k in seen or seen.add(k)))
        if repeated:
            out[split] = [k[0] for k in repeated]
    return out


#: Id columns a builder numbers itself (from the source record's position): records whose rows are equal
#: in every other column repeat a record of the source file, which the id check cannot see.
NUMBERED_IDS = {"fed": "id", "dailydialog": "dialogue_id", "dailydialog_plusplus": "id"}


def duplicated_rows(name: str, ds: datasets.DatasetDict) -> dict[str, list[tuple[Any, Any]]]:
    """``{split: [(id of the repeat, id of the first), …]}`` for source records (all rows sharing a numbered
    id, e.g. one DailyDialog dialogue) equal to an earlier one apart from that id."""
    col = NUMBERED_IDS.get(name)
    out: dict[str, list[tuple[Any, Any]]] = {}
    for split, part in ds.items() if col else ():
        if col not in part.column_names:
            continue
        records: dict[Any, list[str]] = {}
        for row in part.to_list():
            records.setdefault(row[col], []).append(
                json.dumps({k: v for k, v in row.items() if k != col}, sort_keys=True, default=str))
        first: dict[tuple[str, ...], Any] = {}
        for rid, rows in records.items():
            key = tuple(rows)
            if key in first:
                out.setdefault(split, []).append((rid, first[key]))
            else:
                first[key] = rid
    return out


def check_unique_ids(name: str, ds: datasets.DatasetDict, source: Any) -> None:
    """Refuse a dataset whose rows repeat an id, or repeat another row apart from a numbered id (a
    meta-evaluation or a score would count them twice)."""
    rows = duplicated_rows(name, ds)
    if rows:
        col = NUMBERED_IDS[name]
        what = "; ".join(f"{split}: {len(v)} record(s), e.g. {col} {v[0][0]} repeats {col} {v[0][1]}"
                         for split, v in rows.items())
        raise MalformedDataError(f"{source}: {name} has records that repeat another exactly apart from {col!r} "
                                 f"({what}); remove the repeated records, or pass allow_duplicates=True "
                                 "(--allow-duplicates) to keep them as published.")
    dups = duplicated_ids(name, ds)
    if dups:
        what = "; ".join(f"{split}: {len(v)} repeated id(s) {v[:5]}{' …' if len(v) > 5 else ''}"
                         for split, v in dups.items())
        raise MalformedDataError(f"{source}: {name} has duplicated rows ({'/'.join(ID_COLUMNS[name])}: {what}); remove "
                                 "the repeated rows, or pass allow_duplicates=True (--allow-duplicates) to keep them.")


def load(name: str, config: str | None = None, *, data_dir: str | os.PathLike | None = None,
         cache_dir: str | os.PathLike | None = None, data_files: Any = None,
         allow_duplicates: bool = False) -> datasets.DatasetDict:
    """Build (or reuse the cache of) ``name``/``config`` and return its ``DatasetDict``; rows repeating an id
    are an error unless ``allow_duplicates``.

    >>> load("fed", "turn", data_dir="../shared/data/fed")["test"].num_rows  # doctest: +SKIP
    375
    """
    builder = get_builder(name, config, data_dir=data_dir, cache_dir=cache_dir, data_files=data_files)
    if os.environ.get("DIALEVAL_PROGRESS", "1") == "0":  # the project's switch for progress bars
        datasets.disable_progress_bars()
    try:
        builder.download_and_prepare()
    except datasets.exceptions.DatasetGenerationError as exc:
        # datasets wraps errors raised while generating; surface ours (file and line) directly.
        cause = exc.__cause__
        if isinstance(cause, (MalformedDataError, FileNotFoundError)):
            raise cause from None
        if isinstance(cause, OSError):  # disk full (ENOSPC), quota, permissions while writing the Arrow cache
            raise OSError(cause.errno, f"could not write the datasets cache under {builder.cache_dir!r} "
                          f"({cause.strerror or cause}); free space there or pass another --cache-dir") from None
        if isinstance(cause, UnicodeError):  # a builder that reads text without naming the file
            raise MalformedDataError(f"{builder.config.data_dir or data_files}: text that is not valid Unicode "
                                     f"({cause.reason}); save the files as UTF-8.") from None
        raise
    ds = builder.as_dataset()
    if not allow_duplicates:
        check_unique_ids(name, ds, data_files if data_files is not None else builder.config.data_dir)
    return ds


def _card_template(name: str) -> tuple[dict[str, Any], str]:
    """Front matter (minus generated keys) and body of the card template ``<name>/README.md``, package data
    under ``datasets_scripts/cards/`` (``dialeval.datasets``, read with ``importlib.resources``)."""
    from huggingface_hub import DatasetCard

    from dialeval.resources import dataset_card_dir

    path = dataset_card_dir(name) / "README.md"
    if not path.is_file():
        return {"pretty_name": name}, f"# {name}\n\nExported by `dialeval datasets export {name}`.\n"
    card = DatasetCard(path.read_text(encoding="utf-8"))
    data = {k: v for k, v in card.data.to_dict().items() if k not in {"configs", "dataset_info"}}
    return data, card.text


#: The Hub's ``size_categories`` buckets (upper bound exclusive → label).
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"))


def size_category(infos: dict[str, datasets.DatasetInfo]) -> str:
    """The Hub size bucket of the largest exported config (rows over all its splits)."""
    rows = max((sum(s.num_examples for s in (info.splits or {}).values()) for info in infos.values()), default=0)
    return next((label for bound, label in SIZE_CATEGORIES if rows < bound), "n>100M")


def render_card(name: str, infos: dict[str, datasets.DatasetInfo], files: dict[str, dict[str, str]],
                default_config: str | None = None) -> str:
    """A dataset card whose YAML declares ``configs`` (data files per split) and ``dataset_info``
    (features and split sizes) for each exported config; the prose comes from the packaged card template."""
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    meta, body = _card_template(name)
    card_data = DatasetCardData(**meta)
    card_data["size_categories"] = [size_category(infos)]
    card_data["configs"] = [
        {"config_name": cfg, **({"default": True} if cfg == default_config else {}),
         "data_files": [{"split": split, "path": path} for split, path in files[cfg].items()]}
        for cfg in files
    ]
    slim = {}
    for cfg, info in infos.items():
        slim[cfg] = datasets.DatasetInfo(features=info.features, splits=info.splits)
    DatasetInfosDict(slim).to_dataset_card_data(card_data)
    return f"---\n{card_data.to_yaml()}\n---\n{body}"


def _write_jsonl(ds: datasets.Dataset, path: Path) -> None:
    # Written with the standard json module: floats keep their exact repr (pandas' writer rounds them).
    with open(path, "w", encoding="utf-8", newline="") as f:
        for row in ds:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _export_target(out: str | os.PathLike, data_dir: str | os.PathLike | None, cache_dir: str | os.PathLike | None,
                   overwrite: bool) -> Path:
    """``out`` checked before any work: not the input folder, not a file, not a non-empty folder that is not
    a previous export (it is replaced as a whole)."""
    from dialeval.io.files import check_output_path

    return check_output_path(out, inputs=[data_dir, cache_dir], kind="dir", option="--out", overwrite=overwrite,
                             owned=is_export)


def is_export(folder: Path) -> bool:
    """True for an earlier export (a ``README.md`` card and config folders), which a new export may replace."""
    return (folder / "README.md").is_file() and all(p.is_dir() or p.name == "README.md" for p in folder.iterdir()
                                                      if not p.name.startswith("."))


def export_notes(name: str, *, data_dir: str | os.PathLike | None = None,
                 data_files: str | os.PathLike | None = None) -> list[str]:
    """What building ``name`` leaves out of its source, one line each (DSTC10 items without annotations)."""
    if not issubclass(_builder_class(name), Dstc10Builder):
        return []
    if data_files is not None:
        files = [Path(data_files).expanduser()]
    else:
        files = sorted(resolve_data_dir(data_dir, DATA_FOLDERS.get(name, name)).glob("*.json"))[:1]
    return [note for note in map(dstc10.unannotated_note, files) if note]


def export(name: str, out: str | os.PathLike, *, data_dir: str | os.PathLike | None = None,
           configs: list[str] | None = None, file_format: str = "parquet",
           cache_dir: str | os.PathLike | None = None, allow_duplicates: bool = False,
           overwrite: bool = False, data_files: str | os.PathLike | None = None) -> dict[str, dict[str, int]]:
    """Write ``name``'s configs in the Hub layout under ``out``: ``<config>/<split>.parquet`` (or
    ``.jsonl``) and ``README.md``. Returns ``{config: {split: rows}}``. ``data_files`` (one file) builds a
    file in the format of a :data:`FILE_BUILDERS` entry instead of ``data_dir``.

    The folder is written as a temporary sibling, its card last, and renamed into place when complete: an
    interrupted export leaves no ``out`` (and no card, so ``datasets.load_dataset`` refuses the leftover)."""
    from dialeval.io.files import atomic_directory, atomic_write_text

    if file_format not in {"parquet", "jsonl"}:
        raise ValueError(f"file_format={file_format!r}; use 'parquet' or 'jsonl'.")
    configs = configs or config_names(name)
    if data_files is not None:
        if data_dir is not None:
            raise ValueError("give --file FILE or --data-dir DIR, not both.")
        data_files = Path(data_files).expanduser()
        if not data_files.is_file():
            raise FileNotFoundError(f"--file {str(data_files)!r} is not a file.")
    elif name in DATA_FOLDERS:
        data_dir = resolve_data_dir(data_dir, DATA_FOLDERS[name])
    target = _export_target(out, data_dir if data_files is None else data_files, cache_dir, overwrite)
    infos, files, counts = {}, {}, {}
    with atomic_directory(target, overwrite=overwrite, owned=is_export) as tmp:
        for cfg in configs:
            ds = load(name, cfg, data_dir=data_dir, cache_dir=cache_dir, allow_duplicates=allow_duplicates,
                      data_files=str(data_files) if data_files is not None else None)
            (tmp / cfg).mkdir(exist_ok=True)
            files[cfg], counts[cfg] = {}, {}
            for split, part in ds.items():
                rel = f"{cfg}/{split}.{file_format}"
                if file_format == "parquet":
                    part.to_parquet(str(tmp / rel))
                else:
                    _write_jsonl(part, tmp / rel)
                files[cfg][split] = rel
                counts[cfg][split] = part.num_rows
            first = next(iter(ds.values()))
            infos[cfg] = datasets.DatasetInfo(features=first.features, splits=first.info.splits)
        default = _builder_class(name).DEFAULT_CONFIG_NAME
        card = render_card(name, infos, files, default if default in files else configs[0])
        atomic_write_text(tmp / "README.md", card)  # last: a folder without its card is incomplete
    return counts
