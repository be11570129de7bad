"""The ``treppen`` command line: ``train``, ``tournament``, ``play``, ``serve``, ``mcp``, ``replay``,
``analyse``, ``label``, ``bench`` and ``zoo`` (docs/ARCHITECTURE.md "Command line").

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and ``run(args)``;
modules are imported only when their subcommand runs, so ``treppen --help`` stays fast.
``treppen`` alone prints the help; ``treppen --version`` the installed version.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from importlib import metadata
from typing import Any

from treppen.apps.options import CommandLineError, Parser
from treppen.arena.interrupts import exit_status
from treppen_env.messages import PATH_LIMIT, cut, shorten

SUBCOMMANDS = {
    "train": ("treppen.apps.train", "self-play training from a YAML config on a backend: sb3, rllib, kernel or expert"),
    "tournament": ("treppen.apps.tournament_command", "duplicate-deal tournament between agents, rated by Elo"),
    "play": ("treppen.apps.play", "play against agents in the terminal"),
    "serve": ("treppen.apps.serve", "play, watch and replay deals in a local web page"),
    "mcp": ("treppen.apps.mcp_server", "serve games to MCP clients (assistants): stdio, or HTTP on 127.0.0.1"),
    "replay": ("treppen.apps.replay", "print a recorded deal move by move"),
    "analyse": ("treppen.apps.analyse", "rank the moves of a recorded position by search"),
    "label": ("treppen.apps.label", "label positions of seeded deals by search: a resumable dataset job in shards"),
    "bench": ("treppen.apps.bench", "measure environment throughput (decision steps/s, deals/s)"),
    "zoo": ("treppen.apps.zoo_command", "list the shipped trained agents, or rebuild them from their cards"),
}


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The argument parser (a :class:`~treppen.apps.options.Parser`: a refused option raises
    :class:`~treppen.apps.options.CommandLineError`); only the subcommand named in ``argv`` gets its
    module imported."""
    parser = Parser(prog="treppen", description="Treppenrommé RL suite")
    parser.add_argument("--version", action="version", version=f"treppen {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(SUBCOMMANDS) + "}")
    for name, (module, help_text) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name in argv:
            importlib.import_module(module).add_arguments(sp)
            sp.set_defaults(run=importlib.import_module(module).run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``treppen``; returns the exit status (130 or 143 after Ctrl-C or SIGTERM)."""
    try:
        return _run(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt as err:  # before a command handles it (its imports, its setup): no traceback
        print("treppen: interrupted", file=sys.stderr)
        return exit_status(err)


def _run(argv: list[str]) -> int:
    """Parse ``argv`` and run its subcommand; bad input is one line and status 2."""
    parser = build_parser(argv)
    if not argv:
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(argv)
    except CommandLineError as err:  # a refused option, named: one line as any bad input
        print(f"{err.prog}: error: {err}", file=sys.stderr)
        return 2
    warnings.formatwarning = _warning_line
    try:
        return int(args.run(args) or 0)
    except BrokenPipeError:  # the reader left (treppen replay ... | head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141  # as a shell reports death by SIGPIPE
    except (ValueError, OSError) as err:  # the user's input: a bad file, spec, config or checkpoint
        print(f"treppen {args.command}: error: {cut(_line(err))}", file=sys.stderr)
        return 2


def _warning_line(message: Warning | str, category: type[Warning], *where: Any, **_: Any) -> str:
    """A warning as one line for a person (``treppen: warning: ...``), without the source line that
    Python's format adds (the code that warned is not what the reader needs)."""
    kind = "warning" if category is UserWarning else category.__name__
    return f"treppen: {kind}: {message}\n"


def _line(err: BaseException) -> str:
    """The error's message; an OSError's with its file (``[Errno 36] File name too long: '...'``, cut)."""
    if isinstance(err, OSError) and err.strerror and not isinstance(err, FileNotFoundError):
        where = f": {shorten(str(err.filename), PATH_LIMIT)}" if err.filename is not None else ""
        return f"{err.strerror}{where}"
    return str(err)


def _version() -> str:
    """The installed distribution's version (``unknown`` when run from a source tree not installed)."""
    try:
        return metadata.version("treppen")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


if __name__ == "__main__":
    sys.exit(main())
