"""Explanations of illegal actions: why an action is not legal in a position, in words that name
the rule it breaks (the engine's :class:`~treppen_env.engine.IllegalActionError` messages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from treppen_env import actions
from treppen_env.cards import card_to_str
from treppen_env.core import layout

if TYPE_CHECKING:
    from treppen_env.engine import GameState


def illegal_reason(state: GameState, action: int) -> str:
    """Why ``action`` (an int) is not legal for the player to move in ``state``, naming the
    action, the phase and the rule it breaks (RULES §3-§6): the text of the engine's
    :class:`~treppen_env.engine.IllegalActionError` (a slow path, taken only on an error)."""
    try:
        act = actions.decode(action)
    except ValueError as err:
        return str(err)
    text = f"illegal action {act} (action {action}) for player {state.current}"
    if state.phase == layout.DEAL_OVER:
        return f"{text}: the deal is over (RULES §6)"
    if state.phase == layout.DRAW:
        if act.kind == "draw":
            return f"{text}: the stock is empty (RULES §6.4)"
        if act.kind == "take":
            if act.depth > len(state.staircase):
                return f"{text}: the staircase holds only {len(state.staircase)} cards (RULES §4.1)"
            deepest = card_to_str(state.staircase[-act.depth])
            return f"{text}: the deepest card taken, {deepest}, cannot be played at once (RULES §4.2)"
        return f"{text} in the draw phase: draw from the stock or take from the staircase first (RULES §4.1)"
    hand = state.hands[state.current]
    if act.kind in ("draw", "take"):
        return f"{text}: already drew this turn (RULES §4.1)"
    missing = [c for c in act.cards if not hand >> c & 1]
    if missing:
        return f"{text}: {' '.join(card_to_str(c) for c in missing)} not in hand"
    if state.must_use >= 0:
        return (
            f"{text}: {card_to_str(state.must_use)} taken from the staircase must be melded or "
            "laid off first (RULES §4.2)"
        )
    if act.kind == "discard":
        return f"{text}: a single staircase card just taken may not be discarded (RULES §4.4)"
    if act.kind == "meld":
        return f"{text}: not a legal meld under these rules (RULES §3.1-3.2) or it leaves a dead end (§4.5)"
    return (
        f"{text}: no meld on the table takes {card_to_str(act.card)} at its "
        f"{actions.TARGETS[act.target]} (RULES §4.3), or it leaves a dead end (§4.5)"
    )
