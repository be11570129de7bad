"""Atomic file writes and JSON lines read back (treppen_env/files.py)."""

from __future__ import annotations

import os
import re
import stat

import pytest

from treppen_env.files import append_jsonl, atomic_write_text, read_jsonl


def test_atomic_writes_respect_the_umask(tmp_path):
    """Result files written atomically get the usual mode (mkstemp alone would make them 0600)."""
    umask = os.umask(0o022)
    os.umask(umask)
    path = atomic_write_text(tmp_path / "out.txt", "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert path.read_text() == "x" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_read_jsonl_repairs_a_torn_last_line_and_names_a_damaged_one(tmp_path):
    """``imitation.jsonl`` (and every .jsonl a resume reads) is repaired as
    ``results.jsonl`` is; a damaged line before the last is named with its file and line."""
    path = tmp_path / "imitation.jsonl"
    assert read_jsonl(path) == []
    append_jsonl(path, {"round": 0})
    append_jsonl(path, {"round": 1})
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"round": 2, "loss')  # a kill during the append
    assert read_jsonl(path, repair=False) == [{"round": 0}, {"round": 1}]
    assert path.read_bytes() == whole + b'{"round": 2, "loss'
    assert read_jsonl(path) == [{"round": 0}, {"round": 1}]
    assert path.read_bytes() == whole  # cut, so that appending goes on cleanly
    path.write_bytes(b'{"round": 0}\n{"round": 1,\n{"round": 2}\n')
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))} line 2: not JSON \(.*\); fix or remove the line$"):
        read_jsonl(path)
    path.write_bytes(b'{"round": 0}\n[1, 2]\n')
    with pytest.raises(ValueError, match=r"line 2: a JSON object per line, not list"):
        read_jsonl(path)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"", b""),
        (b'{"a": 1}\n', b'{"a": 1}\n'),
        (b'{"a": 1}\n{"b": 2, "lo', b'{"a": 1}\n'),  # a write cut short: dropped
        (b'{"b": 2, "lo', b""),  # the only line, torn
        (b'{"a": 1}\n{"b": 2}', b'{"a": 1}\n{"b": 2}\n'),  # whole but for its newline: ended
        (b'{"a": 1}\n{"b": "\xc3', b'{"a": 1}\n'),  # cut inside a character
        (b'{"a": 1}\n' + b'{"x": "' + b"y" * 200_000, b'{"a": 1}\n'),  # a torn line longer than a block
    ],
)
def test_appending_drops_a_torn_last_line_first(tmp_path, before, after):
    """Every .jsonl writer appends after a whole line: a torn one is dropped, never glued to the new one."""
    path = tmp_path / "evals.jsonl"
    path.write_bytes(before)
    append_jsonl(path, {"steps": 5})
    assert path.read_bytes() == after + b'{"steps": 5}\n'
    assert read_jsonl(path, repair=False)[-1] == {"steps": 5}


def test_a_game_record_appended_after_a_torn_line_reads(tmp_path):
    """The records writer (treppen_env/records.py) drops the torn line as append_jsonl does."""
    from tests.treppen_env.test_records import play_recorded
    from treppen_env import records

    _, _, (rec,) = play_recorded(2)
    path = tmp_path / "r.jsonl"
    records.append(path, rec)
    path.write_bytes(path.read_bytes() + b'{"format": "treppen-rec')
    records.append(path, rec)
    assert records.read(path) == [rec, rec]
