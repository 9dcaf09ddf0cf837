"""Which table columns feed which metric input ("roles"), checked against a table's schema.

Pure functions over declarations and ``{column: type}`` descriptions, shared by the Ray engine and the
single-process ``dialeval score``. A role is a ``compute`` input name (``predictions``, ``references``,
``contexts``, ``dialogues``, ``candidates``); by default it reads the column of the same name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dialeval.registry import MetricDeclaration

TEXT = "string"
TEXTS = "list of strings"
#: A list of turn records with a ``text`` field (FED, DailyDialog exports): read as their texts.
TURNS = "list of turns"


@dataclass(frozen=True)
class Role:
    name: str
    kind: str  # TEXT or TEXTS
    required: bool = True


ROLES: dict[str, tuple[Role, ...]] = {
    "responses": (Role("predictions", TEXT),),
    "response_sets": (Role("predictions", TEXTS),),
    "dialogues": (Role("dialogues", TEXTS),),
    "turns": (Role("contexts", TEXTS), Role("predictions", TEXT)),
    "speakers": (Role("predictions", TEXTS), Role("references", TEXTS), Role("candidates", TEXTS, False)),
    "story_turns": (Role("predictions", TEXTS), Role("references", TEXTS)),
    "references": (Role("predictions", TEXT), Role("references", TEXT)),
}


def input_kind(decl: MetricDeclaration, config: str | None = None) -> str:
    """The input kind a metric reads in ``config``: a metric with a ``turn`` config reads
    contexts + responses there (FULL), otherwise its declared kind."""
    if config is not None and config not in decl.configs:
        raise ValueError(f"metric {decl.name!r} has configs {list(decl.configs)}, not {config!r}.")
    if config == "turn":
        return "turns"
    return decl.inputs


def default_config(decl: MetricDeclaration, columns: Mapping[str, str], available: set[str]) -> str | None:
    """The config to run when none is given: ``turn`` when the metric has one and a ``contexts`` column is
    mapped or present, else its UI/first config (``None`` for single-config metrics)."""
    if decl.configs == ("default",):
        return None
    if "turn" in decl.configs and ("contexts" in columns or "contexts" in available):
        return "turn"
    if decl.ui_config:
        return decl.ui_config
    return decl.configs[0]


def default_columns(kind: str, columns: Mapping[str, str], schema: Mapping[str, str]) -> dict[str, str]:
    """``columns`` with the one default both routes apply (one process and ``--engine ray``): a metric of
    responses with no ``predictions`` column mapped, and none of that name, reads the table's only text column
    (a text file's lines, a JSONL ``response`` field). Otherwise ``columns`` as given."""
    columns = dict(columns)
    if kind == "responses" and "predictions" not in columns and "predictions" not in schema:
        text = [name for name, described in schema.items() if described == TEXT]
        if len(text) == 1:
            columns["predictions"] = text[0]
    return columns


def parse_column_args(items: list[str]) -> dict[str, str]:
    """``["predictions=response", ...]`` (CLI ``--column``) → ``{"predictions": "response"}``."""
    out: dict[str, str] = {}
    for item in items:
        role, sep, column = item.partition("=")
        if not sep or not role.strip() or not column.strip():
            raise ValueError(f"--column {item!r}: use ROLE=COLUMN, e.g. --column predictions=response.")
        out[role.strip()] = column.strip()
    return out


def resolve_columns(decl: MetricDeclaration, kind: str, columns: Mapping[str, str] | None,
                    schema: Mapping[str, str]) -> dict[str, str]:
    """``{role: column}`` for ``decl`` reading ``kind`` inputs from a table whose ``schema`` maps column
    name → :func:`describe_type`. One clear ``ValueError`` naming the column and the fix otherwise."""
    columns = dict(columns or {})
    roles = ROLES[kind]
    known = {r.name for r in roles}
    unknown_roles = sorted(set(columns) - known)
    if unknown_roles:
        raise ValueError(f"metric {decl.name!r} has no input {unknown_roles[0]!r}; its inputs are "
                         f"{sorted(known)} (map them with --column ROLE=COLUMN / columns={{ROLE: COLUMN}}).")
    out: dict[str, str] = {}
    for role in roles:
        column = columns.get(role.name, role.name)
        if column not in schema:
            if role.name not in columns and not role.required:
                continue
            hint = f"--column {role.name}=NAME (Python: columns={{{role.name!r}: NAME}})"
            raise ValueError(f"column {column!r} (input {role.name!r} of {decl.name}) is not in the data; its "
                             f"columns are {sorted(schema)}. Choose the column with {hint}.")
        got = schema[column]
        if got != role.kind and not (role.kind == TEXTS and got == TURNS):
            raise ValueError(f"column {column!r} (input {role.name!r} of {decl.name}) holds {got}, but "
                             f"{role.name} must be a {role.kind} per row; map another column with "
                             f"--column {role.name}=NAME.")
        out[role.name] = column
    return out


def describe_type(arrow_type: Any) -> str:
    """``"string"``, ``"list of strings"`` or a short name for any other Arrow type."""
    import pyarrow as pa

    if not isinstance(arrow_type, pa.DataType):  # a pandas-backed block: Python objects
        return getattr(arrow_type, "__name__", str(arrow_type))
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return TEXT
    if (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)) and (
            pa.types.is_string(arrow_type.value_type) or pa.types.is_large_string(arrow_type.value_type)):
        return TEXTS
    if (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)) and pa.types.is_struct(
            arrow_type.value_type):
        field = next((f for f in arrow_type.value_type if f.name == "text"), None)
        if field is not None and (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            return TURNS
    return str(arrow_type)


def describe_value(value: Any) -> str:
    """The same description for a Python value (rows read from JSON Lines/CSV)."""
    if isinstance(value, str):
        return TEXT
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return TEXTS
    if isinstance(value, (list, tuple)) and all(isinstance(v, dict) and isinstance(v.get("text"), str)
                                                for v in value):
        return TURNS
    return type(value).__name__


def as_texts(value: Any) -> Any:
    """A list of turn records (``{"speaker": ..., "text": ...}``) as the list of their texts; anything else as is."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, dict) for v in value):
        return [v.get("text") for v in value]
    return value


def schema_of_rows(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Column descriptions of in-memory rows (the first row's value types; rows are checked again later)."""
    if not rows:
        raise ValueError("the input has no rows.")
    return {k: describe_value(v) for k, v in rows[0].items()}
