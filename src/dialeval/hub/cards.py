"""The Hub cards ``dialeval hub build`` writes: a metric Space's YAML front matter (the fields the Hub's own
metric Spaces use, its models and datasets), its generated "Install" / "How to use from the Hub" / client
sections, the install line they and ``requirements.txt`` give (:class:`Install`), and the helpers the demo Space's
card shares (:mod:`dialeval.hub.repos`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from dialeval import registry
from dialeval._version import __version__

GRADIO_TESTED = "6.31.0"  # sdk_version when gradio is not installed where the folders are built
SHORT_DESCRIPTION_MAX = 60  # the Hub's limit for short_description
LICENSE = "mit"
COLORS = ("blue", "green", "indigo", "purple", "pink", "red", "yellow", "gray")


@dataclass(frozen=True)
class Install:
    """Where a Space gets dialeval: a vendored wheel (``wheel`` set) named by an absolute URL, or the
    package index (``wheel`` is ``None``). ``wheel_url`` is that URL (a ``/``-ended prefix gets the wheel's
    file name appended); empty: the Space repo's own file URL."""

    wheel: Path | None
    version: str = __version__
    wheel_url: str = ""
    torch: str = "cpu"  # the torch build of model Spaces (dialeval.hub.space_hardware.TORCH_BUILDS)

    def requirements(self, extras: Sequence[str], repo_id: str) -> str:
        """``requirements.txt``: the torch lines of :attr:`torch` when ``extras`` pull torch (``models``), then
        :meth:`requirement`."""
        from dialeval.hub.space_hardware import torch_lines

        return (torch_lines(self.torch) if "models" in extras else "") + self.requirement(extras, repo_id) + "\n"

    def requirement(self, extras: Sequence[str], repo_id: str) -> str:
        """The ``requirements.txt`` line, as the Space's ``pip install -r`` reads it with only that file
        present: ``dialeval[extras] @ <absolute wheel URL>``, or the index's release."""
        extra = f"[{','.join(extras)}]" if extras else ""
        if self.wheel is None:
            return f"dialeval{extra}=={self.version}"
        return f"dialeval{extra} @ {self.url(repo_id)}"

    def url(self, repo_id: str) -> str:
        """The wheel's absolute URL for the Space ``repo_id``."""
        if self.wheel is None:
            raise ValueError("an index install has no wheel URL.")
        if self.wheel_url:
            return self.wheel_url + self.wheel.name if self.wheel_url.endswith("/") else self.wheel_url
        return f"https://huggingface.co/spaces/{repo_id}/resolve/main/{self.wheel.name}"

    def source(self, repo_id: str) -> str:
        """What ``pip install`` takes for dialeval itself, without quotes: the wheel URL or ``dialeval==V``."""
        return f"dialeval=={self.version}" if self.wheel is None else self.url(repo_id)

    def command(self, repo_id: str, extras: Sequence[str]) -> str:
        """The ``pip install`` a user runs before ``evaluate.load("<org>/<name>")`` (no checkout): the
        same requirement as the Space's ``requirements.txt``."""
        return f'pip install "{self.requirement(extras, repo_id)}"'


def sdk_version() -> str:
    """The Gradio version the Spaces declare: the one installed here (tested), else :data:`GRADIO_TESTED`."""
    try:
        return metadata.version("gradio")
    except metadata.PackageNotFoundError:
        return GRADIO_TESTED


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(front matter, body)`` of a Markdown card (``({}, text)`` without front matter)."""
    import yaml

    match = re.match(r"^---\n(.*?)\n---\n?", text, flags=re.S)
    if not match:
        return {}, text
    return dict(yaml.safe_load(match.group(1)) or {}), text[match.end():]


def short_description(text: str, limit: int = SHORT_DESCRIPTION_MAX) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters (the Hub rejects longer ones)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:(")
    return cut + "…"


def preload(decls: Iterable[registry.MetricDeclaration]) -> list[str]:
    """The Space's ``preload_from_hub``: the Hub repo of each model metric's default model (an offline
    package name as its Hub id, :data:`dialeval.models.runtime.HUB_IDS`), fetched when the Space is built, so
    that every model metric runs on the Space with no download at request time."""
    from dialeval.models.runtime import hub_id

    return list(dict.fromkeys(hub_id(d.models[0]) for d in decls if d.needs_model and d.models))


def card_models(decls: Iterable[registry.MetricDeclaration]) -> list[str]:
    """The card's ``models:``: the Hub repos of the models the metrics offer (offline names as their Hub ids,
    ``hf-last-token:ID`` as ``ID``), so the Hub links the Space to them."""
    from dialeval.models.runtime import hub_id

    names = (hub_id(m.split(":", 1)[-1]) for d in decls if d.needs_model for m in d.models)
    return list(dict.fromkeys(n for n in names if re.fullmatch(r"[\w.-]+(/[\w.-]+)?", n)))


def card_datasets(decls: Iterable[registry.MetricDeclaration], org: str) -> list[str]:
    """The card's ``datasets:``: the ``ORG/<dataset>`` repos ``hub build`` writes that the metrics are
    meta-evaluated on (``dialeval meta-eval``: every known dataset config a metric fits)."""
    from dialeval.meta import sources

    known = sources.declarations().values()
    return list(dict.fromkeys(f"{org}/{data.name}" for d in decls if d.meta_levels for data in known
                              if any(sources.fits(d, data, c) is None for c in data.configs)))


def front_matter(decl: registry.MetricDeclaration, source: dict[str, Any], index: int, org: str = "ORG") -> str:
    """The Space card's YAML: every field the Hub's own metric Spaces use, plus license and descriptions, and
    the models and datasets it uses (:func:`card_models`, :func:`card_datasets`)."""
    from huggingface_hub import SpaceCardData

    data = SpaceCardData(
        title=decl.title, sdk="gradio", sdk_version=sdk_version(), python_version=python_version(),
        app_file="app.py", license=LICENSE, tags=list(dict.fromkeys(["evaluate", "metric", *decl.tags])),
        emoji=decl.emoji, colorFrom=source.get("colorFrom", COLORS[index % len(COLORS)]),
        colorTo=source.get("colorTo", COLORS[(index + 3) % len(COLORS)]), pinned=False,
        short_description=short_description(decl.summary),
        description=" ".join(str(source.get("description") or f"{decl.title}: {decl.summary}.").split()),
        **({"preload_from_hub": preload([decl])} if preload([decl]) else {}),
        **({"models": card_models([decl])} if card_models([decl]) else {}),
        **({"datasets": card_datasets([decl], org)} if card_datasets([decl], org) else {}),
    )
    return f"---\n{data.to_yaml()}\n---\n"


def _call_example(decl: registry.MetricDeclaration, var: str) -> str:
    args = [f"{key}={value!r}" for key, value in decl.example.items()]
    args += [f"{option}=resource_path({rel!r})" for option, rel in decl.resources.items()]
    body = ",\n    ".join(args)
    return f"{var}.compute(\n    {body},\n)"


def client_example(repo_id: str, api_name: str, arguments: dict[str, str], outputs: str) -> list[str]:
    """A ``gradio_client`` call of the Space ``repo_id`` by named arguments only (Markdown lines)."""
    args = "".join(f"    {key}={value!r},\n" for key, value in arguments.items())
    return ["```python", "from gradio_client import Client", "", f'client = Client("{repo_id}")',
            f"{outputs} = client.predict(\n{args}    api_name=\"{api_name}\",\n)", "```"]


def widget_client_section(decl: registry.MetricDeclaration, repo_id: str) -> list[str]:
    """The card's "Call this Space from Python" section: ``/compute`` with the worked example."""
    from dialeval.ui.widgets import api_parameters, example_boxes

    arguments = {k: v for k, v in example_boxes(decl).items() if v}
    return ["## Call this Space from Python",
            "The Space's `/compute` endpoint takes named parameters, each optional (default: the widget's "
            f"initial value): {', '.join(f'`{p}`' for p in api_parameters(decl))}. It returns the status line, "
            "the results table, the plot and the full-precision `compute()` output:", "",
            *client_example(repo_id, "/compute", arguments, "status, table, plot, result"), ""]


def hub_usage(decl: registry.MetricDeclaration, repo_id: str, install: Install, extras: Sequence[str]) -> str:
    """The generated "Install" and "How to use from the Hub" sections of a metric Space's card."""
    config = decl.ui_config if decl.ui_config and decl.ui_config != decl.configs[0] else None
    load_args = f'"{repo_id}"' + (f', "{config}"' if config else "")
    lines = ["import evaluate", ""]
    if decl.resources:
        lines[1:1] = ["from dialeval.resources import resource_path  # data shipped with dialeval"]
    lines += [f"{decl.name} = evaluate.load({load_args})", _call_example(decl, decl.name)]
    source = "the wheel vendored in this Space" if install.wheel else f"dialeval {install.version} from the index"
    section = ["", "## Install", f"The module script imports the `dialeval` library; install it first ({source}):", "",
               "```bash", install.command(repo_id, extras), "```", "", "## How to use from the Hub", "```python",
               *lines, "```", "", *widget_client_section(decl, repo_id)]
    return "\n".join(section) + "\n"


def metric_card(decl: registry.MetricDeclaration, repo_id: str, install: Install, extras: Sequence[str],
                index: int) -> str:
    """The metric's packaged card with complete Space front matter and the Hub install/usage filled in."""
    try:
        source, body = split_front_matter(decl.card())
    except FileNotFoundError:  # a plugin without a card: one from its declaration
        refs = "".join(f"- {paper}\n" for paper in decl.papers) + "".join(f"- <{url}>\n" for url in decl.urls)
        source, body = {}, f"# Metric Card for {decl.title}\n\n{decl.summary}.\n\n## References\n{refs}"
    org = repo_id.split("/", 1)[0]
    body = body.replace('evaluate.load("<org>/', f'evaluate.load("{org}/')
    usage = hub_usage(decl, repo_id, install, [e for e in extras if e != "space"])  # evaluate.load needs no UI
    heading = re.search(r"^# .*\n", body, flags=re.M)
    at = heading.end() if heading else 0
    return front_matter(decl, source, index, org) + body[:at] + usage + body[at:]
