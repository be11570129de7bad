"""The JSON views of the web app (:mod:`treppen.apps.web`): a position as the page shows it.

Pure functions of the engine's state: the table from a seat (:func:`table_view`), its legal moves
grouped as the page offers them (:func:`legal_moves`), a move as the log shows it
(:func:`move_text`), a deal's outcome in words, a hint's estimates, and the summary of a finished
deal. No web framework here: the sessions and the replays build their answers from these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from treppen.agents.search import Analysis, MoveEstimate, SearchAgent
from treppen.apps.analyse import uniform_shares
from treppen_env import records
from treppen_env.actions import action_to_str
from treppen_env.actions import decode as decode_action
from treppen_env.cards import NUM_RANKS, card_to_str, rank_of, suit_of
from treppen_env.engine import GameState, Phase
from treppen_env.render import sort_for_display


def cards(ids: Sequence[int]) -> list[str]:
    """The cards ``ids`` as text (``card_to_str``), in their order."""
    return [card_to_str(int(c)) for c in ids]


def _layoff_meld(state: GameState, card: int, target: int) -> int:
    """Index in ``state.melds`` of the meld that ``card`` is laid off onto at ``target`` (RULES §4.3)."""
    for i, m in enumerate(state.melds):
        if target == 0 and m.kind == "set" and m.low == rank_of(card):
            return i
        if m.kind == "run" and m.suit == suit_of(card):
            end = (m.low - 1) % NUM_RANKS if target == 1 else (m.low + m.length) % NUM_RANKS
            if end == rank_of(card):
                return i
    raise ValueError(f"no meld takes {card_to_str(card)}")  # the mask never offers such a lay-off


def legal_moves(state: GameState, mask: np.ndarray) -> dict[str, Any]:
    """The legal actions of ``mask`` grouped as the page offers them (docs/ARCHITECTURE.md "Actions").

    ``draw``: the action or None; ``take``: depth -> action; ``melds``: ``{action, cards}``;
    ``layoffs``: ``{action, card, meld, end}`` (``meld`` indexes the view's melds); ``discards``:
    card -> action.
    """
    moves: dict[str, Any] = {"draw": None, "take": {}, "melds": [], "layoffs": [], "discards": {}}
    for a in np.flatnonzero(mask).tolist():
        act = decode_action(a)
        if act.kind == "draw":
            moves["draw"] = a
        elif act.kind == "take":
            moves["take"][act.depth] = a
        elif act.kind == "meld":
            moves["melds"].append({"action": a, "cards": cards(act.cards)})
        elif act.kind == "layoff":
            meld = _layoff_meld(state, act.card, act.target)
            end = ("set", "low", "high")[act.target]
            moves["layoffs"].append({"action": a, "card": card_to_str(act.card), "meld": meld, "end": end})
        else:
            moves["discards"][card_to_str(act.card)] = a
    return moves


def table_view(state: GameState, names: Sequence[str], viewer: int | None) -> dict[str, Any]:
    """The table as JSON: what seat ``viewer`` may see (RULES §4: own hand, public cards), or every
    hand when ``viewer`` is None (watching, replays)."""
    players = []
    for seat in range(state.num_players):
        hand = state.hands[seat]
        shown = viewer is None or viewer == seat
        players.append(
            {
                "seat": seat,
                "name": names[seat],
                "hand": cards(sort_for_display(hand)) if shown else None,
                "hand_size": hand.bit_count(),
                "known": cards(sort_for_display(state.known[seat])),
                "points": state.points[seat],
                "total": state.totals[seat],
            }
        )
    return {
        "num_players": state.num_players,
        "rules": state.rules.name,
        "deal": state.deals_played + (0 if state.deal_over else 1),
        "turn": state.turn,
        "dealer": state.dealer,
        "to_move": None if state.deal_over else state.current,
        "phase": Phase(state.phase).name.lower(),
        "stock_size": len(state.stock),
        "staircase": cards(state.staircase),
        "melds": [{"owner": m.owner, "kind": m.kind, "cards": cards(m.cards)} for m in state.melds],
        "players": players,
        "viewer": viewer,
    }


OUTCOME_WORDS = {
    "went_out": "went out",
    "romme": "went out Rommé (in one go, RULES §6.2)",
    "stock_exhausted": "the stock ran out",
    "max_turns": "the turn limit was reached",
}


def outcome_text(outcome: str) -> str:
    """A deal's outcome in words (``went_out`` -> ``went out``)."""
    return OUTCOME_WORDS.get(outcome, outcome.replace("_", " "))


def move_text(action: int, staircase: Sequence[str]) -> str:
    """The move as the log shows it: a take names the cards taken from ``staircase`` (before it)."""
    act = decode_action(action)
    text = action_to_str(action)
    if act.kind == "take":
        text += f" ({' '.join(staircase[-act.depth :])})"
    return text


def hint_view(estimates: Sequence[MoveEstimate], state: GameState) -> list[dict[str, Any]]:
    """A hint's estimates as JSON (:meth:`MoveEstimate.to_dict`, best first), each with ``text``,
    the move as the log shows it, in ``state`` (the position searched)."""
    staircase = cards(state.staircase)
    return [{**e.to_dict(), "text": move_text(e.action, staircase)} for e in estimates]


def search_view(found: Analysis, searcher: SearchAgent) -> dict[str, Any]:
    """How far a hint's search went, as JSON: the ``playouts`` it ran, its playout ``budget``
    (``None``: no cap) and whether its wall-clock deadline ``cut_short`` it (:class:`Analysis`)."""
    return {"playouts": found.playouts, "budget": searcher.playouts, "cut_short": found.cut_short}


def beliefs_view(beliefs: np.ndarray, stock_size: int, top: int = 8) -> list[dict[str, Any]]:
    """The hint's beliefs as JSON: per opponent (relative seat 1, 2, ...; the player to move is 0)
    the ``top`` cards it most likely holds, each ``{"card": "QH", "p": 0.42}``, most likely first
    (:meth:`treppen.agents.search.SearchAgent.card_beliefs`), and beside them ``uniform``: the
    uniform deal's probability of any one unseen card (:func:`uniform_shares`)."""
    shares = uniform_shares(beliefs, stock_size)
    out = []
    for seat in range(1, beliefs.shape[0]):
        order = np.argsort(-beliefs[seat], kind="stable")[:top]
        likely = [c for c in order if beliefs[seat, c] > 0]
        held = [{"card": card_to_str(int(c)), "p": round(float(beliefs[seat, c]), 3)} for c in likely]
        out.append({"seat": seat, "cards": held, "uniform": round(float(shares[seat]), 3)})
    return out


def final_table(record: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The last position of a finished deal's ``record`` (every hand shown), replayed: a game deals
    the next deal at once, so the env no longer holds it."""
    *_, last = records.replay(record)
    return table_view(last.env.game, names, None)


def deal_summary(env: Any, table: dict[str, Any]) -> dict[str, Any]:
    """Outcome, deal points and totals of the deal that just ended (from the env's infos), with
    ``table``, its last position."""
    info = env.infos[env.possible_agents[0]]
    names = env.possible_agents
    state: GameState = env.game
    in_game = "totals" in info
    return {
        "deal": state.deals_played,
        "outcome": info["outcome"],
        "outcome_text": outcome_text(info["outcome"]),
        "went_out": None if info["went_out"] is None else names.index(info["went_out"]),
        "deal_points": [int(info["deal_points"][a]) for a in names],
        "totals": [p["total"] for p in table["players"]],
        "game_over": bool(state.game_over()) if in_game else None,
        "winner": state.winner() if in_game else None,
        "table": table,
    }
