"""Command-line options shared by the ``treppen`` subcommands: argparse types that check a value
(their refusals name the option, as argparse's ``argument --seed: ...``, and show the value cut to
a fixed length), the parser whose errors are cut alike, and the options both servers take
(``treppen serve`` and ``treppen mcp``: ``--port``, ``--record``, ``--max-sessions``) and those of the
commands that read a record file (``treppen replay`` and ``treppen analyse``: ``FILE``, ``--deal``),
and ``--ray-address`` of the commands that run Ray tasks (``treppen tournament`` and ``treppen label``).
"""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from treppen_env.messages import PATH_LIMIT, cut, shorten

#: Games a server keeps at once unless ``--max-sessions`` says otherwise (serve and mcp alike).
MAX_SESSIONS = 64
#: The largest seed a command takes (and an MCP client's ``new_game``): NumPy's 32-bit seeds.
MAX_SEED = 2**32 - 1
#: The largest count a command takes (a C int: worker pools and array sizes take no more).
MAX_COUNT = 2**31 - 1
#: Characters of a refused command line's error at most.
ERROR_LIMIT = 500


class CommandLineError(ValueError):
    """A command line that the parser refuses (:class:`Parser`); ``prog`` names the command."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises :class:`CommandLineError` instead of printing the usage
    and exiting, so that a refused option is one line like any other bad input
    (``treppen tournament: error: argument --seed: ...``); the message is cut to
    :data:`ERROR_LIMIT` characters (argparse echoes a bad choice whole). Its subparsers are of this
    class too."""

    def error(self, message: str) -> NoReturn:
        raise CommandLineError(self.prog, cut(message, ERROR_LIMIT))


def whole(least: int, most: int | None = None, noun: str = "a whole number") -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least`` and at most ``most`` (None:
    :data:`MAX_COUNT`).

    :param noun: what the number is, as the refusal says it (``a seed``, ``a port``).
    """
    allowed = f"{least}..{most}" if most is not None else f"of at least {least}"
    top = MAX_COUNT if most is None else most

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # not digits, or more than Python reads (4300 digits)
            value = None
        if value is None or value < least or (most is not None and value > most):
            raise argparse.ArgumentTypeError(f"{shorten(text)} is not {noun} {allowed}")
        if value > top:
            raise argparse.ArgumentTypeError(f"{shorten(text)} is more than {top}")
        return value

    return number


#: An argparse type: a seed 0..:data:`MAX_SEED`.
seed = whole(0, MAX_SEED, "a seed")
#: An argparse type: a TCP port 0..65535 (0: one the system picks).
port = whole(0, 65535, "a port")


def positive(noun: str) -> Callable[[str], float]:
    """An argparse type: a finite number greater than 0; ``noun`` is what the refusal calls it
    (``a number of seconds``)."""

    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value < math.inf:
            raise argparse.ArgumentTypeError(f"{shorten(text)} is not {noun} greater than 0")
        return value

    return number


#: An argparse type: a finite number of seconds greater than 0.
positive_seconds = positive("a number of seconds")


def share(text: str) -> float:
    """An argparse type: a share from 0 to 1 (0.2: 20%)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{shorten(text)} is not a share from 0 to 1 (0.2: 20%)")
    return value


def writable_folder(path: str | Path) -> Path:
    """``path`` as a folder that files can be written in: an existing folder, or one that can be
    made (its nearest existing parent is a folder that takes a new file). Nothing is created.

    :raises ValueError: for a file (or a path under one), or a folder that takes no new file
        (no permission, a read-only file system), naming the path and the reason.
    """
    folder = Path(path)
    name = shorten(str(folder), PATH_LIMIT)
    try:
        existing = next(p for p in (folder, *folder.parents) if p.exists() or p == p.parent)
        if not existing.is_dir():
            raise ValueError(f"{name} is a file, or lies under one; name a folder (record files go inside it)")
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise ValueError(f"{name} takes no new file ({err.strerror})") from None
    return folder


def out_folder(text: str) -> Path:
    """An argparse type: an output folder (``--out``), named: an empty path would be the current folder.

    :raises argparse.ArgumentTypeError: for an empty (or blank) path.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path would be the current folder; name a folder, e.g. runs/job")
    return Path(text)


def record_folder(text: str) -> Path:
    """An argparse type: a folder for record files (:func:`writable_folder`)."""
    try:
        return writable_folder(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_server_arguments(parser: argparse.ArgumentParser, default_port: int, port_help: str) -> None:
    """The options of both servers: ``--port`` (``port_help``, default ``default_port``), ``--record``
    and ``--max-sessions`` (default :data:`MAX_SESSIONS`)."""
    parser.add_argument("--port", type=port, default=default_port, help=f"{port_help} (default {default_port})")
    parser.add_argument(
        "--record",
        type=record_folder,
        default=None,
        metavar="DIR",
        help="append every finished deal to a record file in the folder DIR",
    )
    parser.add_argument(
        "--max-sessions",
        type=whole(1),
        default=MAX_SESSIONS,
        metavar="N",
        help=f"games kept at once; one idle for 5 minutes makes room (default {MAX_SESSIONS})",
    )


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of a command that reads one deal of a record file: ``file`` and ``--deal``."""
    parser.add_argument(
        "file", help="a record file (.jsonl or .jsonl.gz) written by play, tournament --record or serve"
    )
    parser.add_argument(
        "--deal",
        type=whole(1, noun="a deal number"),
        default=1,
        metavar="N",
        help="which deal of the file, 1 = first (default)",
    )


def add_ray_address(parser: argparse.ArgumentParser, work: str, instead: str) -> None:
    """``--ray-address`` (default None: no Ray): run ``work`` (``play the deals``) as Ray tasks; the
    help says that the option ``instead`` (``--workers``) is then ignored."""
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help=f"{work} as Ray tasks: auto or host:port joins a Ray cluster, local starts one here "
        f"(needs the ray extra; {instead} is then ignored)",
    )
