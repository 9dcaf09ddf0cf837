"""A leaderboard row's options: a metric's variant rows (``NAME_2``: ``NAME`` with ``max_order=2``) run with their
fixed options and the user's ``--metric-arg`` ones, which may add to them but never contradict them."""

from __future__ import annotations

import json
from typing import Any

from dialeval import registry


def row_options(name: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The options a metric row ``name`` runs with: a variant's fixed options with the user's (``--metric-arg``);
    a user option that contradicts a variant's fixed one (``NAME_2`` with ``max_order=4``) is refused in one line,
    since the row's name would then say something its numbers are not."""
    options = dict(options or {})
    found = registry.meta_row(name)
    if found is None:
        return options
    decl, fixed = found
    for key, value in options.items():
        if key in fixed and value != fixed[key]:
            raise ValueError(f"--metric-arg {name}:{key}={json.dumps(value, default=str)} contradicts the row "
                             f"{name!r}, which is {decl.name} with {key}={json.dumps(fixed[key])}; score "
                             f"--metric {decl.name} --metric-arg {decl.name}:{key}=VALUE instead (its rows: "
                             f"{sorted(decl.meta_variants) or [decl.name]}).")
    return {**fixed, **options}
