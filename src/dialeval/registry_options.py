"""A metric's options: their declaration (:class:`Option`: default, type, help, choices, range) and the checks
every ``compute``/load call runs on the values given (:func:`check_options`), before any work.

Part of the registry (:mod:`dialeval.registry`), which re-exports every name here; import-light (no torch, no
``evaluate``).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dialeval.registry import MetricDeclaration

OPTION_TYPES = ("int", "float", "str", "bool", "ints", "texts", "path", "model", "any")


@dataclass(frozen=True)
class Option:
    """One ``compute``/load option: its default, its type (one of :data:`OPTION_TYPES`), a help line,
    allowed ``choices``, whether the per-metric widget exposes it (``widget=True``) and, for numbers (and each
    of ``ints``), the allowed range ``minimum`` ≤ value ≤ ``maximum`` (``minimum`` excluded when
    ``exclusive_minimum``). Every option that sizes work declares a range, so no request can ask for
    unbounded work (``n=10**22``) and impossible values (``base=1e-300``) are refused before any work."""

    name: str
    default: Any = None
    type: str = "any"
    help: str = ""
    choices: tuple[Any, ...] = ()
    widget: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    per_item: bool = False  #: one entry per input item: a metric made before its inputs exist cannot take it

    def __post_init__(self) -> None:
        if self.type not in OPTION_TYPES:
            raise ValueError(f"Option {self.name!r}: type must be one of {OPTION_TYPES}, got {self.type!r}.")
        if (self.minimum is not None or self.maximum is not None) and self.type not in NUMBER_TYPES:
            raise ValueError(f"Option {self.name!r}: a range needs a number type {NUMBER_TYPES}, not {self.type!r}.")

    def range_text(self) -> str:
        """The range as a reader writes it, e.g. ``1 ≤ n ≤ 16`` or ``base > 1``."""
        low = "" if self.minimum is None else f"{_number(self.minimum)} {'<' if self.exclusive_minimum else '≤'} "
        high = "" if self.maximum is None else f" ≤ {_number(self.maximum)}"
        return f"{low}{self.name}{high}"

    def check(self, value: Any, metric: str = "") -> None:
        """Refuse ``value`` outside the declared range (a ``ValueError`` naming the option and the range) or, for
        the types every metric reads the same way (``bool``, ``int``, ``float``, ``texts``), of the wrong type (a
        ``TypeError``: an option a metric does not use in this call must not accept nonsense silently); other
        types are checked by the metric's own code. ``None`` means the default and passes."""
        where = f"{metric}: " if metric else ""
        if value is None:
            return
        self._check_type(value, where)
        if self.minimum is None and self.maximum is None:
            return
        items = value if self.type == "ints" and isinstance(value, (list, tuple, range)) else [value]
        for item in items:
            if isinstance(item, bool) or not isinstance(item, numbers.Real):
                continue  # not a number: the metric's own check names the type
            low_bad = self.minimum is not None and (item <= self.minimum if self.exclusive_minimum
                                                    else item < self.minimum)
            high_bad = self.maximum is not None and item > self.maximum
            if low_bad or high_bad or item != item:
                raise ValueError(f"{where}`{self.name}`={_number(item)} is out of range: {self.range_text()}.")

    def _check_type(self, value: Any, where: str) -> None:
        name, t = f"{where}`{self.name}`", self.type
        if t == "bool" and not isinstance(value, bool) and type(value).__name__ != "bool_":
            raise TypeError(f"{name} must be True or False, got {value!r:.40}.")
        if t == "int" and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
            raise TypeError(f"{name} must be an integer ({self.range_text()}), got {value!r:.40}.")
        if t == "float" and (isinstance(value, bool) or not isinstance(value, (numbers.Real, str))
                             or isinstance(value, str) and not _numeric_text(value)):
            raise TypeError(f"{name} must be a number ({self.range_text()}), got {value!r:.40}.")
        if t == "ints" and not _ints(value):
            raise TypeError(f"{name} must be an integer or a list of integers ({self.range_text()}), got "
                            f"{value!r:.40}.")
        if t in ("str", "model") and isinstance(value, (bool, numbers.Number, bytes, Mapping, list, tuple, set)):
            what = "a model (a Hub id or a local folder)" if t == "model" else "text"
            raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r:.40}.")
        if self.choices and isinstance(value, str) and value not in self.choices:
            raise ValueError(f"{name}={value!r:.40} is not one of {[c for c in self.choices if c is not None]}.")
        if t == "texts":
            if isinstance(value, (str, bytes, numbers.Number)) or isinstance(value, dict):
                raise TypeError(f"{name} must be a list of strings, got {type(value).__name__} {value!r:.40}.")
            if isinstance(value, (list, tuple)):  # another iterable is read once, by the metric
                if not value:
                    raise ValueError(f"{name} is an empty list; pass at least one string (or leave it out).")
                bad = next((i for i, v in enumerate(value) if not isinstance(v, str)), None)
                if bad is not None:
                    raise TypeError(f"{name}[{bad}] is {type(value[bad]).__name__} ({value[bad]!r:.40}), not a "
                                    "string; pass a list of strings.")


NUMBER_TYPES = ("int", "float", "ints")


def _numeric_text(text: str) -> bool:
    """Whether ``text`` reads as a number (``"0.5"``, ``"inf"``): a float option may be given as text."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _ints(value: Any) -> bool:
    """An integer, or a list/tuple/range of integers (bools are not integers here)."""
    items = value if isinstance(value, (list, tuple, range)) else [value]
    return all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in items)


def _number(value: Any) -> str:
    """An int with thousands separators (a 10**22 in scientific form), a float in ``g`` form."""
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}" if abs(value) < 10**21 else f"{float(value):.3e}"
    return f"{value:g}"


def check_options(decl: MetricDeclaration, values: dict[str, Any], *, strict: bool = True) -> None:
    """Check ``values`` against ``decl``'s options: each declared range; with ``strict``, a name the
    metric does not declare is an error (a typo such as ``tokeniser`` must not be ignored)."""
    known = {o.name: o for o in decl.options}
    for name, value in values.items():
        option = known.get(name)
        if option is None:
            if strict:
                raise TypeError(f"{decl.name}: unknown option {name!r}; its options are {sorted(known)}.")
            continue
        option.check(value, decl.name)
