"""``dialeval`` command line. Each sub-command lives in its own module with a ``register(subparsers)``."""

from __future__ import annotations

import argparse
import importlib
import sys

from .._version import __version__

# One module per sub-command family (each defines ``register(subparsers)``).
COMMANDS = ("score", "demo", "fit_space", "dress", "datasets", "meta_eval")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dialeval", description="Dialogue-evaluation metrics.")
    parser.add_argument("--version", action="version", version=f"dialeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError, KeyError) as exc:
        print(f"dialeval {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
