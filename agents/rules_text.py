"""The rules in a page of plain text, for readers that are not people at a table: a language model's
prompt (:mod:`treppen.agents.llm`) and the rules resource of ``treppen mcp`` (:mod:`treppen.apps.mcp_server`).

A summary of docs/RULES.md for one :class:`~treppen_env.rules.Rules` object (its preset's and its
options' values filled in), followed by the move notation of :func:`treppen_env.actions.parse_action`.
"""

from __future__ import annotations

from treppen_env.rules import Rules

MOVE_NOTATION = """\
Moves are written in this notation (cards: rank A 2 3 4 5 6 7 8 9 T J Q K, then suit S H D C, e.g. QH, TS, 7D):
- draw: take the top stock card
- take D: take the top D cards of the staircase (take 1 = the top card only)
- meld C C C ...: lay a set (3 or 4 cards of one rank) or a run (3+ cards of one suit in order) from your hand
- layoff C set|low|high: add card C to the set of its rank, or to the low or high end of a run of its suit
- discard C: put card C on the staircase; this ends your turn"""


def rules_summary(rules: Rules) -> str:
    """The rules of ``rules`` in plain text (RULES §1-§7), then :data:`MOVE_NOTATION`.

    :param rules: the game's rules (a preset with its options).
    :return: about 30 lines of text.
    """
    corner = (
        "A run may turn the corner through the ace (Q-K-A-2)."
        if rules.corner_runs
        else "A run may not turn the corner: the ace is below the 2 (A-2-3) or above the K (Q-K-A)."
    )
    must_use = (
        "The deepest card taken from the staircase must be melded or laid off at once (your next move)."
        if rules.must_use_taken
        else "Cards taken from the staircase never have to be used."
    )
    romme = " (doubled after a Rommé: going out with no earlier meld or lay-off this deal)"
    double = romme if rules.romme_double else ""
    ending = (
        f"The player who goes out also books the values of the cards left in the others' hands{double}."
        if rules.going_out_credit
        else "There is no going-out credit."
    )
    if rules.hand_penalty:
        ending += " Cards left in a hand are deducted from their holder."
    middle = f", {rules.ace_middle} turning the corner" if rules.corner_runs else ""
    game = "500 Rum" if rules.name == "rum500" else "Treppenrommé (staircase rummy)"
    stock = (
        "When the stock runs out, the staircase but its top card is shuffled into a new stock."
        if rules.stock_exhausted == "reshuffle"
        else "When the stock runs out, the deal ends after that turn."
    )
    return f"""\
{game}, rules preset {rules.name!r}. One 52-card pack, no jokers, 2 to 4 players.
Each player is dealt {rules.hand_size_two_players} cards with 2 players, {rules.hand_size} with 3 or 4. The rest \
is the face-down stock; its top card starts the staircase (a face-up discard pile where every card is visible).
A turn: draw, then meld and lay off as often as you like, then discard one card.
- Draw: the top stock card, or the top D cards of the staircase (taking a deep card takes every card above it).
  {must_use}
- Melds: a set is 3 or 4 cards of one rank; a run is 3 or more cards of one suit in order. {corner}
- Lay off: one card from your hand onto any player's meld: a 3-card set, or either end of a run.
- Discard: one card onto the staircase ends your turn. A single staircase card you just took may not be \
discarded in the same turn.
Scoring: every meld and lay-off books its card values at once to the player who laid it: 2-10 face value, \
J Q K 10; an ace {rules.ace_set} in a set, {rules.ace_high} at the high end of a run (after K), \
{rules.ace_low} at the low end (before 2){middle}; {rules.ace_hand} left in hand.
The deal ends when a player's hand is empty (by a discard, a meld or a lay-off). {ending}
{stock} A game is deals until a \
total reaches {rules.target}; the highest total wins.
Your aim in a deal: score more points than the others, by laying valuable melds and going out first.

{MOVE_NOTATION}"""
