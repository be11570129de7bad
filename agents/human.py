"""A person at the terminal (docs/ARCHITECTURE.md "Agents"; after OpenSpiel's ``bots/human.py``).

:class:`HumanAgent` prints the table as the observation shows it (:func:`render_view`), lists
the legal moves in columns and reads a move: its text (``"take 2"``, ``"meld 7S 7H 7D"``,
``"layoff 8H high"``, ``"discard KC"``; see :func:`treppen_env.actions.parse_action`) or its
number in the list. Bad or illegal input is answered with the reason and asked again; an empty
line just asks again, ``?`` or ``help`` shows the table and the move syntax, ``quit`` leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from treppen.agents.base import Agent, legal_actions
from treppen_env.actions import DRAW, NUM_ACTIONS, action_to_str, decode, parse_action
from treppen_env.cards import card_to_str, cards_to_str
from treppen_env.observation import PublicView
from treppen_env.observation import decode as decode_observation

HELP = (
    "type a move as listed (e.g. 'draw', 'take 2', 'meld 7S 7H 7D', 'layoff 8H high', "
    "'discard KC') or its number; '?' or 'help' shows the table again, 'quit' leaves"
)
PROMPT = "your move (? for help): "


def seat_name(seat: int) -> str:
    """Name of a seat relative to the viewer: ``you`` (0), then ``P+1`` (your left neighbour, next to
    play after you), ``P+2``, ... The table, the move log and the results of ``treppen play`` use it."""
    return "you" if seat == 0 else f"P+{seat}"


def render_view(view: PublicView, moves: Sequence[int] | None = None) -> str:
    """The table as one player sees it: stock, staircase, melds, opponents, points and the hand.

    Seats are relative: ``you``, then ``P+1`` (your left neighbour, next to play after you), ...

    :param moves: the legal actions, when known: a turn's second phase then reads ``discard``
        rather than ``meld`` when discarding is all that is left (RULES §4.3-4.4).
    """
    depth = len(view.staircase)
    phase = view.phase
    if phase == "meld" and moves and all(decode(a).kind == "discard" for a in moves):
        phase = "discard"
    lines = [
        f"to move: {seat_name(view.to_move)} ({phase})   dealer: {seat_name(view.dealer)}   "
        f"stock: {view.stock_size} cards",
        f"staircase ({depth}, top last; 'take d' takes the top d):",
    ]
    for i, card in enumerate(view.staircase):
        lines.append(f"  {'  ' * i}{card_to_str(card)}   (take {depth - i})")
    lines.append("melds:" if view.melds else "melds: none")
    for meld in view.melds:
        lines.append(f"  {seat_name(meld['owner']):>4} {meld['kind']:3}  {cards_to_str(meld['cards'])}")
    for seat in range(1, view.num_players):
        known = view.known[seat - 1]
        extra = f", known: {cards_to_str(known)}" if known else ""
        lines.append(f"{seat_name(seat)}: {view.hand_sizes[seat]} cards{extra}")
    points = ", ".join(f"{seat_name(s)} {view.points[s]} (total {view.totals[s]})" for s in range(view.num_players))
    lines.append(f"booked this deal (meld and lay-off points, RULES §5): {points}")
    lines.append(f"your hand: {cards_to_str(view.hand)}")
    if view.must_use is not None:
        lines.append(f"you must meld or lay off {card_to_str(view.must_use)} now (RULES §4.2)")
    if view.banned is not None:
        lines.append(f"you may not discard {card_to_str(view.banned)} this turn (RULES §4.4)")
    return "\n".join(lines)


def format_moves(actions: Sequence[int], width: int = 100) -> str:
    """Numbered move texts laid out in columns, numbered down the columns."""
    items = [f"{i:>3}) {action_to_str(a)}" for i, a in enumerate(actions)]
    if not items:
        return ""
    cell = max(len(s) for s in items) + 2
    cols = max(1, width // cell)
    rows = -(-len(items) // cols)
    lines = []
    for r in range(rows):
        lines.append("".join(items[c * rows + r].ljust(cell) for c in range(cols) if c * rows + r < len(items)))
    return "\n".join(line.rstrip() for line in lines)


def illegal_reason(action: int, view: PublicView) -> str:
    """Why ``action`` is not legal in the position of ``view`` (as far as the observation shows)."""
    act = decode(action)
    text = action_to_str(action)
    if view.phase == "draw":
        if act.kind == "take" and act.depth > len(view.staircase):
            n = len(view.staircase)
            return f"{text}: the staircase holds only {n} card{'' if n == 1 else 's'} (RULES §4.1)"
        if act.kind == "take":
            deepest = card_to_str(view.staircase[-act.depth])
            return f"{text}: the deepest card taken, {deepest}, could not be played at once (RULES §4.2)"
        if act.kind == "draw":
            return f"{text}: the stock is empty (RULES §6.4)"
        return f"{text}: draw from the stock or take from the staircase first (RULES §4.1)"
    if act.kind in ("draw", "take"):
        return f"{text}: you already drew this turn (RULES §4.1)"
    missing = [c for c in act.cards if c not in view.hand]
    if missing:
        return f"{text}: {cards_to_str(missing)} not in your hand"
    if view.must_use is not None:
        return f"{text}: meld or lay off {card_to_str(view.must_use)} first (RULES §4.2)"
    if act.kind == "discard":
        return f"{text}: a single staircase card just taken may not be discarded (RULES §4.4)"
    if act.kind == "meld":
        return f"{text}: not a meld under these rules (RULES §3) or it leaves a dead end (§4.5)"
    return f"{text}: no meld on the table takes it there (RULES §4.3), or it leaves a dead end (§4.5)"


class HumanAgent(Agent):
    """Asks a person for each move in the terminal.

    :param seed: unused (kept for the common agent signature).
    :param input_fn: reads one line given a prompt (default :func:`input`); inject for tests.
    :param output_fn: writes one text block (default :func:`print`); inject for tests.
    :param width: terminal width for the move list.
    :param show_table: print the table before every move.
    """

    name = "human"

    def __init__(
        self,
        seed: int | None = None,
        input_fn: Callable[[str], str] = input,
        output_fn: Callable[[str], Any] = print,
        width: int = 100,
        show_table: bool = True,
    ):
        super().__init__(seed)
        self.input_fn = input_fn
        self.output_fn = output_fn
        self.width = width
        self.show_table = show_table
        self._hand_before_draw: list[int] | None = None

    def act(self, observation: dict[str, Any]) -> int:
        """Show the position and read a legal move (re-asking on bad or illegal input).

        :raises EOFError: when the input ends (e.g. Ctrl-D) or the person types ``quit``, so the
            caller can stop the game.
        """
        legal = legal_actions(observation)
        mask = np.asarray(observation["action_mask"])
        view = decode_observation(observation)
        moves = [int(a) for a in legal]
        drawn = self._drawn_card(view)
        if self.show_table:
            self.output_fn(render_view(view, moves))
        if drawn is not None:
            self.output_fn(f"you drew {card_to_str(drawn)} from the stock")
        self.output_fn(f"legal moves ({len(moves)}):\n{format_moves(moves, self.width)}")
        while True:
            action = self._read(moves, mask, view)
            if action is not None:
                self._hand_before_draw = list(view.hand) if action == DRAW else None
                return action

    def _read(self, moves: list[int], mask: np.ndarray, view: PublicView) -> int | None:
        """One line of input: a legal action, or None after answering it (empty, help, bad, illegal)."""
        line = self.input_fn(PROMPT).strip()
        if not line:
            return None
        if line.lower() in ("quit", "exit"):
            raise EOFError("the player quit")
        if line.lower() in ("?", "help"):
            self.output_fn(render_view(view, moves))
            self.output_fn(f"{HELP}\nlegal moves:\n{format_moves(moves, self.width)}")
            return None
        if line.isdigit():
            index = int(line)
            if index < len(moves):
                return moves[index]
            self.output_fn(f"there is no move {index}: choose 0..{len(moves) - 1}; {HELP}")
            return None
        try:
            action = parse_action(line)
        except ValueError as err:
            self.output_fn(f"{err}\n{HELP}")
            return None
        if 0 <= action < NUM_ACTIONS and mask[action]:
            return action
        self.output_fn(f"not legal now: {illegal_reason(action, view)}")
        return None

    def _drawn_card(self, view: PublicView) -> int | None:
        """The card this agent just drew from the stock (its hand now less its hand before the draw)."""
        before, self._hand_before_draw = self._hand_before_draw, None
        if before is None or view.phase != "meld":
            return None
        new = set(view.hand) - set(before)
        return new.pop() if len(new) == 1 else None
