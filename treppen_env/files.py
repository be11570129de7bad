"""File helpers for everything a later command reads: atomic writes and appended JSON lines (read
back with a torn last line repaired).

A run can be interrupted at any moment (Ctrl-C, a killed job); every file a later command reads is
therefore written to a temporary file in the same folder and moved into place with ``os.replace``,
so readers see either the old or the new file, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

_UMASK = os.umask(0o022)
os.umask(_UMASK)  # reading the umask means setting it: put it straight back


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], object], suffix: str = "") -> Path:
    """Call ``write(tmp_path)`` on a temporary file next to ``path``, then move it to ``path``.

    :param path: the final file.
    :param write: writes the content to the temporary path it is given.
    :param suffix: suffix of the temporary file (some writers, e.g. ``np.savez``, add one if missing).
    :return: ``path`` as a Path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp{suffix}", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes the file private; give it the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def end_whole_line(path: str | Path) -> None:
    """Make the JSON-lines file ``path`` end with a whole line, before anything is appended to it
    (every ``.jsonl`` writer calls this): a last line without its newline is dropped when it is not
    JSON (a write cut short by a kill or a full disk), else its newline is added. Nothing happens to
    a missing or empty file, or one that ends with a newline."""
    path = Path(path)
    if not path.is_file():
        return
    with open(path, "r+b") as f:
        end = f.seek(0, os.SEEK_END)
        if end == 0:
            return
        f.seek(end - 1)
        if f.read(1) == b"\n":
            return
        start = end
        while start > 0:  # back to the newline before the last line, a block at a time
            size = min(_BLOCK, start)
            f.seek(start - size)
            found = f.read(size).rfind(b"\n")
            if found >= 0:
                start = start - size + found + 1
                break
            start -= size
        f.seek(start)
        try:
            json.loads(f.read())
        except ValueError:  # JSONDecodeError and UnicodeDecodeError: a torn line
            f.truncate(start)
        else:
            f.seek(end)
            f.write(b"\n")


_BLOCK = 1 << 16


def append_jsonl(path: str | Path, record: dict[str, Any]) -> None:
    """Append one JSON line to ``path`` (after :func:`end_whole_line`) and flush it to disk."""
    end_whole_line(path)
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_jsonl(path: str | Path, repair: bool = True) -> list[dict[str, Any]]:
    """The JSON objects of the lines of ``path`` (none when it does not exist), as a resumed run
    reads what it appended with :func:`append_jsonl`.

    A last line that an interruption left unfinished (not JSON) is dropped, and with ``repair`` cut
    from the file so that appending goes on cleanly.

    :raises ValueError: naming the file and the line, for a line before the last that is not a JSON
        object (the file was damaged otherwise; fix or remove the line).
    """
    path = Path(path)
    if not path.is_file():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    last = len(lines) - (lines[-1] == b"")  # the number of the last line with content
    records, good_end = [], 0
    for n, line in enumerate(lines, 1):
        try:
            record = json.loads(line) if line.strip() else None
        except ValueError as err:  # JSONDecodeError and UnicodeDecodeError
            if n < last:
                raise ValueError(f"{path} line {n}: not JSON ({err}); fix or remove the line") from None
            break
        if record is not None and not isinstance(record, dict):
            raise ValueError(f"{path} line {n}: a JSON object per line, not {type(record).__name__}")
        records += [record] if record is not None else []
        good_end += len(line) + 1
    if repair and good_end < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    return records
