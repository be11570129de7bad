"""Replays of uploaded record files for the web app (:mod:`treppen.apps.web`): the deals a file holds,
every position of one deal, and the hint for a position of it.

A file's content (plain or gzipped JSONL, never a server path) is read one line at a time within
the size limits below; only the deal asked for is kept whole. Errors are :class:`BadRequest`
answers naming the line or the deal and what is wrong.
"""

from __future__ import annotations

import gzip
import io
import itertools
import zlib
from collections.abc import Iterator
from typing import Any

from treppen.apps.analyse import analyse_position, analyser, history_before, position
from treppen.apps.web_errors import BadRequest
from treppen.apps.web_views import beliefs_view, cards, hint_view, move_text, outcome_text, search_view, table_view
from treppen_env import records

MAX_RECORD_BYTES = 32 * 1024 * 1024
MAX_REPLAY_STEPS = 5000
MAX_RECORD_LINE = 1024 * 1024  # one deal's record is a few KB; a longer line is not a record
MAX_LISTED = 1000  # deals listed in a replay answer (any deal of the file can be asked for)
#: The agent behind the Hint button (about 0.05 CPU seconds a position); the table's rules reach it.
HINT_SPEC = "rollout,playouts=500,beliefs=greedy"


def _record_lines(content: bytes) -> Iterator[bytes]:
    """The lines of a record file's ``content`` (plain or gzipped), read one at a time so that only
    one line is held unpacked.

    :raises BadRequest: 400 for gzip that does not unpack; 413 when it unpacks to more than
        ``MAX_RECORD_BYTES`` or holds a line longer than ``MAX_RECORD_LINE``.
    """
    gzipped = content[:2] == b"\x1f\x8b"
    stream: gzip.GzipFile | io.BytesIO = gzip.GzipFile(fileobj=io.BytesIO(content)) if gzipped else io.BytesIO(content)
    total = 0
    try:
        for number in itertools.count(1):
            line = stream.readline(MAX_RECORD_LINE + 1)
            if not line:
                return
            total += len(line)
            if total > MAX_RECORD_BYTES:
                raise BadRequest(f"the unpacked record file is larger than {MAX_RECORD_BYTES} bytes", 413)
            if len(line) > MAX_RECORD_LINE:
                raise BadRequest(f"line {number} is longer than {MAX_RECORD_LINE} bytes: not a deal record", 413)
            yield line
    except (OSError, EOFError, zlib.error) as err:
        raise BadRequest(f"the gzipped file does not unpack: {err}") from None


def _read_deal(content: bytes, deal: int) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    """The number of deals in a record file's ``content``, a listing of the first ``MAX_LISTED``
    and the record of deal ``deal`` (1-based). The file is parsed line by line: only deal ``deal``
    is kept whole.

    :raises BadRequest: for content that is not a record file (naming the line and what is wrong)
        or a deal that is not in it.
    """
    listing: list[dict[str, Any]] = []
    record: dict[str, Any] | None = None
    count = 0
    for number, line in enumerate(_record_lines(content), 1):
        if not line.strip():
            continue
        try:
            parsed = records.parse_line(line, f"the file, line {number}")
        except records.RecordError as err:
            raise BadRequest(str(err)[:500]) from None
        count += 1
        if count <= MAX_LISTED:
            entry = {k: parsed[k] for k in ("agents", "outcome", "deal_points")}
            listing.append(entry | {"deal": count, "outcome_text": outcome_text(parsed["outcome"])})
        if count == deal:
            record = parsed
    if not count:
        raise BadRequest("the file holds no deals")
    if record is None:
        raise BadRequest(f"deal {deal}: the file holds deals 1..{count}")
    return count, listing, record


def replay_frames(content: bytes, deal: int) -> dict[str, Any]:
    """The deals of a record file's ``content`` and every position of deal ``deal`` (1-based).

    :raises BadRequest: as :func:`_read_deal`; for a deal that does not replay.
    """
    count, listing, record = _read_deal(content, deal)
    frames = _frames(record, deal)
    outcome = outcome_text(record["outcome"])
    return {"count": count, "deals": listing, "deal": deal, "record": record, "outcome_text": outcome, "frames": frames}


def _frames(record: dict[str, Any], deal: int) -> list[dict[str, Any]]:
    """Every position of ``record`` with the move that led to it.

    :raises BadRequest: 413 for a deal longer than ``MAX_REPLAY_STEPS``; 400 when it does not replay.
    """
    _check_length(record, deal)
    frames: list[dict[str, Any]] = []
    try:
        for step in records.replay(record, where=f"deal {deal}"):
            move = None
            if step.index >= 0:
                move = {"seat": step.seat, "move": move_text(step.action, frames[-1]["table"]["staircase"])}
            frames.append({"move": move, "table": table_view(step.env.game, record["agents"], None)})
    except records.RecordError as err:
        raise BadRequest(str(err)[:500]) from None
    return frames


def _check_length(record: dict[str, Any], deal: int) -> None:
    """:raises BadRequest: 413 for a deal longer than ``MAX_REPLAY_STEPS``."""
    if len(record["actions"]) > MAX_REPLAY_STEPS:
        raise BadRequest(
            f"deal {deal} has {len(record['actions'])} moves; the page shows at most {MAX_REPLAY_STEPS}", 413
        )


def replay_hint(content: bytes, deal: int, step: int, seed: int, ends: float | None = None) -> dict[str, Any]:
    """The moves of the position before move ``step`` (1 = the first) of deal ``deal`` of a record
    file's ``content``, ranked by :data:`HINT_SPEC` under the record's rules, searched from the
    observation of the player to move only; ``played`` is the move the record played there;
    ``search`` as in a session's hint (:func:`treppen.apps.web_views.search_view`).

    :param ends: when the search must end (``time.monotonic()`` seconds; ``None``: no deadline).
    :raises BadRequest: as :func:`_read_deal`; 413 for a deal longer than ``MAX_REPLAY_STEPS``;
        400 for a step out of range or after the deal's end, or a deal that does not replay to it.
    """
    _, _, record = _read_deal(content, deal)
    _check_length(record, deal)
    try:
        env = position(record, step, f"deal {deal}")
    except ValueError as err:  # a RecordError too
        raise BadRequest(str(err)[:500]) from None
    searcher = analyser(HINT_SPEC, seed, env.rules)
    searcher.history = history_before(record, step)  # what the player to move saw the others do
    if ends is not None:
        searcher.finish_by(ends)
    found = analyse_position(env, searcher)
    action = record["actions"][step - 1]
    played = {"action": action, "move": move_text(action, cards(env.game.staircase))}
    estimates, beliefs = hint_view(found, env.game), beliefs_view(found.beliefs, len(env.game.stock))
    return {
        "deal": deal,
        "step": step,
        "agent": HINT_SPEC,
        "played": played,
        "estimates": estimates,
        "beliefs": beliefs,
        "search": search_view(found, searcher),
    }
