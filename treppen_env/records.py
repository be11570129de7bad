"""Game records: write, read, replay and check deals (docs/ARCHITECTURE.md "Game records").

A record is one JSON object per deal, one per line (``.jsonl``, or gzipped ``.jsonl.gz``):

==================  ===========================================================================
``format``          ``"treppen-record/1"``
``env``             the env version that played it (:data:`treppen_env.ENV_VERSION`; absent in
                    records written before it was stored)
``rules``           preset name (``"treppenromme"``, ``"rum500"``; RULES §8)
``rules_options``   the options that differ from the preset (dict, may be empty)
``num_players``     2..4
``dealer``          the dealing seat
``deck``            52 cards in notation, top first, as the env's ``deck`` reset option takes them
``agents``          list, seat -> agent spec (``"greedy"``, ``"human"``, a model path, ...)
``actions``         action indices 0..897 in the order played
``reshuffles``      ``[{"step": i, "stock": [cards top first]}]``: the stock made from the staircase
                    after action ``i`` emptied it (RULES §6.4), so the record replays without the RNG
``outcome``         ``"went_out"``, ``"romme"``, ``"stock_exhausted"`` or ``"max_turns"`` (RULES §6)
``went_out``        the seat that went out, or ``null``
``deal_points``     list, seat -> the deal's points (RULES §6.2)
==================  ===========================================================================

Writers may add keys (a tournament's ``deal_id``, a game's ``game_deal`` and ``totals``); readers
keep them. :class:`Recorder` records the deals an env plays; :func:`record_match` records what a
match loop played; :func:`replay` steps a record through the env (``raw_env``) and :func:`check`
replays it to the end, raising :class:`RecordError` naming the step where it stops agreeing.
"""

from __future__ import annotations

import collections
import gzip
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from treppen_env.actions import NUM_ACTIONS, action_to_str
from treppen_env.cards import NUM_CARDS, card_to_str, parse_card, parse_deck
from treppen_env.engine import OUTCOMES, GameState, Phase
from treppen_env.files import atomic_write, end_whole_line
from treppen_env.rules import MAX_PLAYERS, MIN_PLAYERS, make_rules
from treppen_env.version import ENV_VERSION

FORMAT = "treppen-record/1"
#: Keys every record holds.
REQUIRED = (
    "format", "rules", "rules_options", "num_players", "dealer", "deck", "agents", "actions",
    "reshuffles", "outcome", "went_out", "deal_points",
)  # fmt: skip


class RecordError(ValueError):
    """A record that is malformed or does not replay; the message names the record and the step."""


# ---------------------------------------------------------------------------------- recording
def deck_of(state: GameState) -> list[str]:
    """A deck (top first, in notation) that deals exactly the position of a freshly dealt ``state``.

    The hands are bitsets, so the order within a hand is lost; any order deals the same hands.
    Each seat's cards take its places in the deal order (RULES §2.2), then come the first
    staircase card (§2.3) and the stock top first.

    :raises ValueError: when ``state`` is not at the very start of a deal.
    """
    if state.turn != 0 or state.phase != Phase.DRAW or state.melds or len(state.staircase) != 1:
        raise ValueError("deck_of needs a freshly dealt state (before the first action)")
    n = state.num_players
    per_hand = state.rules.cards_dealt(n)
    hands = [iter(sorted(_bits(h))) for h in state.hands]
    order = [next(hands[(state.dealer + 1 + i) % n]) for i in range(n * per_hand)]
    order += [state.staircase[0], *state.stock[::-1]]
    return [card_to_str(c) for c in order]


def _bits(bits: int) -> list[int]:
    return [c for c in range(NUM_CARDS) if bits >> c & 1]


class _LoggingShuffles:
    """Stands in for the engine's generator and logs every reshuffle of the staircase (RULES §6.4)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.stocks: list[list[int]] = []

    def permutation(self, x: Any) -> np.ndarray:
        result = self.rng.permutation(x)
        if not isinstance(x, (int, np.integer)):  # an int is a new deck: deck_of reads it from the deal
            self.stocks.append([int(c) for c in result])
        return result

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "rng":
            raise AttributeError(name)
        return getattr(self.rng, name)


class Recorder:
    """Records the deals played in a ``raw_env`` (a deal, or every deal of a game).

    Call :meth:`step` with each action right after ``env.step(action)``. When a deal ends its
    record is appended to :attr:`records` (and passed to ``on_record``).

    :param env: a ``treppen_env.raw_env`` just reset (no action played yet).
    :param agents: the agent spec of each seat.
    :param extra: keys added to every record (e.g. ``{"deal_id": "3:greedy,random:1"}``).
    :param on_record: called with each finished record.
    :raises ValueError: when ``agents`` does not name every seat or the env is not at a deal's start.
    """

    def __init__(
        self,
        env: Any,
        agents: Sequence[str],
        extra: Mapping[str, Any] | None = None,
        on_record: Callable[[dict[str, Any]], None] | None = None,
    ):
        state: GameState = env.game
        if len(agents) != state.num_players:
            raise ValueError(f"{len(agents)} agent specs for {state.num_players} seats")
        self.env = env
        self.agents = [str(a) for a in agents]
        self.extra = dict(extra or {})
        self.on_record = on_record
        self.records: list[dict[str, Any]] = []
        self._shuffles = _LoggingShuffles(state.rng)
        state.rng = self._shuffles  # type: ignore[assignment]
        self._start()

    def _start(self) -> None:
        state: GameState = self.env.game
        self._deck = deck_of(state)
        self._dealer = state.dealer
        self._actions: list[int] = []
        self._reshuffles: list[dict[str, Any]] = []
        self._deals_played = state.deals_played
        self._shuffles.stocks.clear()

    def step(self, action: int) -> dict[str, Any] | None:
        """Note ``action``, just played; returns the deal's record when it ended the deal."""
        state: GameState = self.env.game
        self._actions.append(int(action))
        for stock in self._shuffles.stocks:
            self._reshuffles.append({"step": len(self._actions) - 1, "stock": [card_to_str(c) for c in stock[::-1]]})
        self._shuffles.stocks.clear()
        if state.deals_played == self._deals_played:
            return None
        info = self.env.infos[self.env.possible_agents[0]]
        agent_names = self.env.possible_agents
        record = {
            "format": FORMAT,
            "env": ENV_VERSION,
            "rules": state.rules.name,
            "rules_options": state.rules.overrides(),
            "num_players": state.num_players,
            "dealer": self._dealer,
            "deck": self._deck,
            "agents": self.agents,
            "actions": self._actions,
            "reshuffles": self._reshuffles,
            "outcome": info["outcome"],
            "went_out": None if info["went_out"] is None else agent_names.index(info["went_out"]),
            "deal_points": [int(info["deal_points"][a]) for a in agent_names],
            **self.extra,
        }
        if "totals" in info:
            record["totals"] = [int(info["totals"][a]) for a in agent_names]
            record["game_deal"] = state.deals_played
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)
        if not state.deal_over:  # a game: the next deal has been dealt
            self._start()
        return record


def record_match(
    actions: Iterable[int],
    agents: Sequence[str],
    *,
    seed: int | None,
    options: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    **env_kwargs: Any,
) -> list[dict[str, Any]]:
    """The records of an episode (a deal, or every deal of a game) that a match loop played in
    ``raw_env(**env_kwargs)`` reset with ``seed`` and ``options``, from the actions it returned
    (e.g. ``arena.match.play_match(...).actions``). The episode is played again to record it:
    the seed decides the deck when ``options`` gives none, and every reshuffle (RULES §6.4).

    :param env_kwargs: the env's arguments (``num_players``, ``rules``, ``episode``, rules options).
    :return: one record per deal that ended (a game cut short ends with its last full deal).
    :raises RecordError: when an action is illegal in the replay, naming the step.
    """
    from treppen_env.aec import raw_env

    env = raw_env(**env_kwargs)
    env.reset(seed=seed, options=dict(options or {}))
    recorder = Recorder(env, agents, extra)
    for i, action in enumerate(actions):
        _step(env, i, action, "match")
        recorder.step(action)
    return recorder.records


# ---------------------------------------------------------------------------------- files
def _open(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.GzipFile(path, mode + "b"), encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def write(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``records`` to ``path`` atomically (a temporary file moved into place), one JSON
    line each; gzipped when ``path`` ends in ``.gz``.

    :return: ``path`` as a Path.
    """
    path = Path(path)

    def dump(tmp: str) -> None:
        with _open(Path(tmp), "w") as f:
            for record in records:
                f.write(json.dumps(record, separators=(",", ":")) + "\n")

    return atomic_write(path, dump, suffix="".join(path.suffixes))


def append(path: str | os.PathLike[str], record: Mapping[str, Any]) -> None:
    """Append one record to a plain ``.jsonl`` file and flush it to disk (for long runs: a crash
    loses at most the line being written, which the next append drops,
    :func:`treppen_env.files.end_whole_line`).

    :raises ValueError: for a gzipped path (write those whole with :func:`write`).
    """
    path = Path(path)
    if path.suffix == ".gz":
        raise ValueError(f"cannot append to gzipped {str(path)!r}; use records.write for .gz files")
    path.parent.mkdir(parents=True, exist_ok=True)
    end_whole_line(path)  # a torn last line is dropped, a whole one without its newline ended
    with open(path, "ab") as f:
        f.write((json.dumps(dict(record), separators=(",", ":")) + "\n").encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def loads(text: str, source: str = "<text>") -> list[dict[str, Any]]:
    """Parse and validate the records in JSONL ``text`` (blank lines are skipped).

    :raises RecordError: for a line that is not JSON or not a valid record, naming ``source`` and
        the line.
    """
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            records.append(parse_line(line, f"{source}, line {number}"))
    return records


def parse_line(line: str | bytes, where: str) -> dict[str, Any]:
    """One record from one JSONL line, validated (see :func:`validate`).

    :raises RecordError: for a line that is not JSON (naming the column), nested too deeply, or not
        a valid record, naming ``where``.
    """
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise RecordError(f"{where}, column {err.colno}: not a JSON object ({err.msg})") from None
    except UnicodeDecodeError:
        raise RecordError(f"{where}: not UTF-8 text") from None
    except RecursionError:
        raise RecordError(f"{where}: JSON nested too deeply for a record") from None
    validate(record, where)
    return record


def read(path: str | os.PathLike[str], repair: bool = False) -> list[dict[str, Any]]:
    """The records in ``path`` (``.jsonl`` or ``.jsonl.gz``), validated (see :func:`validate`).

    :param repair: cut a last line that an interruption left unfinished (no newline, not JSON) from
        a plain file, so that :func:`append` goes on cleanly (a resumed run).
    :raises FileNotFoundError: when there is no such file.
    :raises RecordError: for a file that is not a record file, naming the line.
    """
    path = Path(path)
    try:
        with _open(path, "r") as f:
            text = f.read()
    except (OSError, EOFError, UnicodeDecodeError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise RecordError(f"{path}: cannot read it as a record file ({err})") from None
    head, _, tail = text.rpartition("\n")
    if repair and tail.strip() and path.suffix != ".gz":
        try:
            json.loads(tail)
        except json.JSONDecodeError:
            with open(path, "r+b") as f:
                f.truncate(len(head.encode("utf-8")) + (1 if head else 0))
            text = head
    return loads(text, str(path))


def validate(record: Any, where: str = "record") -> None:
    """Check the keys and types of a record (not that it replays: see :func:`check`).

    :raises RecordError: naming ``where`` and what is wrong.
    """
    if not isinstance(record, dict):
        raise RecordError(f"{where}: a record is a JSON object, got {type(record).__name__}")
    missing = [k for k in REQUIRED if k not in record]
    if missing:
        raise RecordError(f"{where}: missing keys {missing}")
    if record["format"] != FORMAT:
        raise RecordError(f"{where}: format {record['format']!r}; this reader knows {FORMAT!r}")
    n = record["num_players"]
    if not _is_int(n) or not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise RecordError(f"{where}: num_players {n!r} is not {MIN_PLAYERS}..{MAX_PLAYERS}")
    if not _is_int(record["dealer"]) or not 0 <= record["dealer"] < n:
        raise RecordError(f"{where}: dealer {record['dealer']!r} is not a seat 0..{n - 1}")
    if not isinstance(record["rules_options"], dict):
        raise RecordError(f"{where}: rules_options must be an object")
    try:
        make_rules(record["rules"], **record["rules_options"]).check_players(n)
        if not isinstance(record["deck"], list):
            raise ValueError("deck must be a list of 52 cards")
        parse_deck(record["deck"])
    except (TypeError, ValueError) as err:
        raise RecordError(f"{where}: {err}") from None
    agents = record["agents"]
    if not isinstance(agents, list) or len(agents) != n or not all(isinstance(a, str) for a in agents):
        raise RecordError(f"{where}: agents must be a list of {n} agent specs (one per seat)")
    actions = record["actions"]
    if not isinstance(actions, list) or not all(_is_int(a) and 0 <= a < NUM_ACTIONS for a in actions):
        raise RecordError(f"{where}: actions must be a list of action indices 0..{NUM_ACTIONS - 1}")
    if record["outcome"] not in OUTCOMES:
        raise RecordError(f"{where}: outcome {record['outcome']!r}; one of {list(OUTCOMES)}")
    points = record["deal_points"]
    if not isinstance(points, list) or len(points) != n or not all(_is_int(p) for p in points):
        raise RecordError(f"{where}: deal_points must be a list of {n} integers")
    reshuffles = record["reshuffles"]
    if not isinstance(reshuffles, list) or not all(
        isinstance(r, dict) and _is_int(r.get("step")) and isinstance(r.get("stock"), list) for r in reshuffles
    ):
        raise RecordError(f"{where}: reshuffles must be a list of {{'step': int, 'stock': [cards]}}")
    _validate_game_keys(record, n, where)


def _validate_game_keys(record: Mapping[str, Any], n: int, where: str) -> None:
    """The optional keys of a deal of a game: ``game_deal`` (1-based) and the ``totals`` after it."""
    if "game_deal" in record and not (_is_int(record["game_deal"]) and record["game_deal"] >= 1):
        raise RecordError(f"{where}: game_deal {str(record['game_deal'])[:40]!r} must be a deal number 1, 2, ...")
    totals = record.get("totals")
    if "totals" in record and not (isinstance(totals, list) and len(totals) == n and all(map(_is_int, totals))):
        raise RecordError(f"{where}: totals must be a list of {n} integers (the game totals after the deal)")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


# ---------------------------------------------------------------------------------- replay
@dataclass
class ReplayStep:
    """One step of a replay: ``seat`` played ``action`` (its text in ``text``); ``env`` is the
    ``raw_env`` after it (the same object at every step: read it before asking for the next)."""

    index: int
    seat: int
    action: int
    text: str
    env: Any


class _ScriptedShuffles:
    """Stands in for the engine's generator during a replay: each reshuffle gives the recorded stock."""

    def __init__(self, reshuffles: Sequence[Mapping[str, Any]]):
        self.reshuffles = list(reshuffles)
        self.step = -1
        self.used = 0
        self.error: str | None = None  # raised by the replay after the step (the env rewrites errors)

    def permutation(self, x: Any) -> np.ndarray:
        cards = [int(c) for c in x]
        if self.used >= len(self.reshuffles):
            self.error = "the stock runs out and is reshuffled (RULES §6.4) but the record has no reshuffle here"
            return np.array(cards)
        entry = self.reshuffles[self.used]
        self.used += 1
        try:
            stock = [parse_card(c) for c in entry["stock"]][::-1]
        except ValueError as err:
            self.error = f"reshuffled stock: {err}"
            return np.array(cards)
        if entry["step"] != self.step:
            self.error = f"the stock is reshuffled here (RULES §6.4), the record says at step {entry['step']}"
        elif sorted(stock) != sorted(cards):
            self.error = "the recorded reshuffled stock is not the staircase's cards below its top (RULES §6.4)"
        return np.array(stock if self.error is None else cards)


def replay(record: Mapping[str, Any], where: str = "record") -> Iterator[ReplayStep]:
    """Play ``record`` in a ``raw_env`` step by step (validating it first).

    Yields one :class:`ReplayStep` per action; before the first, ``ReplayStep(-1, ...)`` holds the
    env just dealt. After the last action, the deal must be over with the record's outcome and
    deal points.

    :raises RecordError: for a malformed record, an action that is illegal at its step (naming the
        step, the seat and the action), a reshuffle that disagrees, or an end that disagrees.
    """
    from treppen_env.aec import raw_env

    validate(record, where)
    env = raw_env(
        num_players=record["num_players"], rules=record["rules"], render_mode="ansi", **record["rules_options"]
    )
    env.reset(options={"deck": record["deck"], "dealer": record["dealer"]})
    if "totals" in record and "game_deal" in record:  # a deal of a game: show the totals before it
        env.game.totals = [t - p for t, p in zip(record["totals"], record["deal_points"], strict=False)]
        env.game.deals_played = int(record["game_deal"]) - 1
    shuffles = _ScriptedShuffles(record["reshuffles"])
    env.game.rng = shuffles  # type: ignore[assignment]
    yield ReplayStep(-1, -1, -1, "deal", env)
    for i, action in enumerate(record["actions"]):
        shuffles.step = i
        seat = env.game.current
        _step(env, i, action, where)
        if shuffles.error is not None:
            raise RecordError(f"{where}, step {i} (player {seat}, {action_to_str(action)}): {shuffles.error}")
        yield ReplayStep(i, seat, action, action_to_str(action), env)
    if shuffles.used != len(shuffles.reshuffles):
        listed = len(shuffles.reshuffles)
        raise RecordError(f"{where}: the record lists {listed} reshuffles, the replay made {shuffles.used}")
    _check_end(record, env.game, f"{where}, step {len(record['actions']) - 1}")


def _check_end(record: Mapping[str, Any], state: GameState, where: str) -> None:
    if not state.deal_over:
        raise RecordError(f"{where}: the actions end but the deal is not over")
    if state.outcome != record["outcome"] or state.deal_points != list(record["deal_points"]):
        raise RecordError(
            f"{where}: the replay ends {state.outcome} with deal points {state.deal_points}; the record says "
            f"{record['outcome']} with {list(record['deal_points'])}"
        )


def _step(env: Any, i: int, action: int, where: str) -> None:
    state: GameState = env.game
    if state.deal_over:
        raise RecordError(f"{where}, step {i}: the deal is already over, yet the record goes on (action {action})")
    seat = state.current
    try:
        env.step(action)
    except ValueError as err:
        raise RecordError(f"{where}, step {i} (player {seat}, action {action}): {err}") from None


def check(record: Mapping[str, Any], where: str = "record") -> None:
    """Replay ``record`` to its end (see :func:`replay`).

    :raises RecordError: naming the step where the replay stops agreeing with the record.
    """
    collections.deque(replay(record, where), maxlen=0)
