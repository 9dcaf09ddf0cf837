"""``dialeval`` command line. Each sub-command lives in its own module with a ``register(subparsers)``."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, NoReturn

from dialeval._version import __version__
from dialeval.extras import MissingExtraError, extra_of, missing_extra
from dialeval.io.files import check_command_paths, is_output_option, remove_temporaries_on_sigterm
from dialeval.models.runtime import Cancelled

# One module per sub-command family (each defines ``register(subparsers)``): the generic commands here, a
# metric family's own commands in its folder (semantic: fit-space, dress-weights; dialstory: train-coherence and
# the speaker-recognition baseline).
COMMANDS = ("dialeval.cli.score", "dialeval.cli.demo", "dialeval.semantic.cli_fit_space",
            "dialeval.semantic.cli_dress", "dialeval.cli.datasets", "dialeval.cli.meta_eval",
            "dialeval.dialstory.cli_coherence", "dialeval.dialstory.cli_baseline", "dialeval.cli.hub",
            "dialeval.cli.leaderboard", "dialeval.relevance.cli_train")


class OneLineParser(argparse.ArgumentParser):
    """argparse with its errors as one line and exit code 2, like every other dialeval error (no usage block;
    ``--help`` still prints it). Abbreviated options are off in every command (a typo such as ``--out`` for
    ``--output`` is an error, never a prefix match); sub-command parsers inherit this class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="dialeval", description="Dialogue-evaluation metrics.")
    parser.add_argument("--version", action="version", version=f"dialeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    _add_overwrite(parser)
    return parser


def _add_overwrite(parser: argparse.ArgumentParser) -> None:
    """Every command that writes an output file gets ``--overwrite`` (an existing output file is refused
    without it, :func:`dialeval.io.files.check_command_paths`)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                _add_overwrite(child)
    dests = {a.dest for a in parser._actions}
    if any(is_output_option(d) for d in dests) and "overwrite" not in dests:
        parser.add_argument("--overwrite", action="store_true", help="replace an existing output file")


#: What a user can fix: bad input, options, files, models. Anything else is a bug and keeps its traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError, KeyError, LookupError,
                                                RecursionError)


def _model_errors() -> tuple[type[BaseException], ...]:
    """Model-loading errors of huggingface_hub / safetensors that derive from none of :data:`USER_ERRORS`."""
    found: list[type[BaseException]] = []
    for module, name in (("huggingface_hub.errors", "HfHubHTTPError"), ("safetensors", "SafetensorError")):
        mod = sys.modules.get(module)
        cls = getattr(mod, name, None) if mod is not None else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def is_user_error(exc: BaseException) -> bool:
    """True for errors that :func:`error_line` reports as one line (bad input, file, option or model)."""

    return isinstance(exc, USER_ERRORS + _model_errors() + (Cancelled,))


def error_line(exc: BaseException) -> str:
    """One line for a user-facing error: its message with newlines folded (the CLI and the demo show it)."""
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    elif isinstance(exc, RecursionError):
        text = "the input is nested too deeply to read"
    else:
        text = str(exc) or type(exc).__name__
    text = " ".join(text.split())
    return text if len(text) <= 600 else text[:597] + "..."


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()  # lists the metrics: a plugin that does not import or clashes fails here
    except ValueError as exc:
        command = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), "")
        print(f"dialeval {command}: error: {error_line(exc)}".replace(" :", ":"), file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    remove_temporaries_on_sigterm()  # SIGTERM runs the cleanups (temporary outputs) that Ctrl-C runs
    try:
        check_command_paths(vars(args), overwrite=bool(getattr(args, "overwrite", False)))
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"dialeval {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - user errors become one line; others keep their traceback
        if isinstance(exc, ModuleNotFoundError) and extra_of(exc.name):  # an optional package: name its extra
            exc = exc if isinstance(exc, MissingExtraError) else missing_extra(exc.name)
        elif not is_user_error(exc):
            raise
        print(f"dialeval {args.command}: error: {error_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
