"""Text rendering of a position: the staircase drawn as a staircase, the melds, the hands (docs/ARCHITECTURE.md).

Used by the env's ``render_mode="ansi"``/``"human"`` and by the human agent.
"""

from __future__ import annotations

from treppen_env.cards import bits_to_cards, card_to_str, cards_to_str
from treppen_env.engine import GameState, Phase


def sort_for_display(bits: int) -> list[int]:
    """Cards of a bitset sorted by suit then rank, ace first."""
    return sorted(bits_to_cards(bits))


def render_text(state: GameState, observer: int | None = None) -> str:
    """The table as text: stock size, the staircase (top card last, each step indented by its
    depth), melds with their owners, booked points and every hand (others' hands as counts unless
    ``observer`` is ``None``, which shows all hands).
    """
    n = state.num_players
    lines = [
        f"deal {state.deals_played + (0 if state.deal_over else 1)}, turn {state.turn}, "
        f"dealer P{state.dealer}, to move P{state.current} ({Phase(state.phase).name.lower()})",
        f"stock: {len(state.stock)} cards",
        f"staircase ({len(state.staircase)}, top last):",
    ]
    depth = len(state.staircase)
    for i, card in enumerate(state.staircase):
        lines.append(f"  {'  ' * i}{card_to_str(card)}   (take {depth - i})")
    lines.append("melds:" if state.melds else "melds: none")
    for meld in state.melds:
        lines.append(f"  P{meld.owner} {meld.kind:3} {cards_to_str(meld.cards)}")
    for seat in range(n):
        hand = state.hands[seat]
        if observer is None or observer == seat:
            shown = cards_to_str(sort_for_display(hand))
        else:
            known = cards_to_str(sort_for_display(state.known[seat]))
            shown = f"{hand.bit_count()} cards" + (f", known: {known}" if known else "")
        lines.append(f"P{seat}: {shown}  | booked {state.points[seat]}, total {state.totals[seat]}")
    if state.deal_over:
        lines.append(f"deal over: {state.outcome}, deal points {state.deal_points}")
    return "\n".join(lines)
