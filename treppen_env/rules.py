"""Rules options and the two presets (RULES §8).

:class:`Rules` is a frozen dataclass listing every option with the ``treppenromme`` default;
:func:`make_rules` builds a preset with overrides and rejects unknown options and impossible values.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from treppen_env.cards import NUM_CARDS
from treppen_env.messages import shorten

MIN_PLAYERS = 2
MAX_PLAYERS = 4
STOCK_EXHAUSTED_MODES = ("end", "reshuffle")


@dataclass(frozen=True)
class Rules:
    """One complete set of rules options (RULES §8). Values are points unless said otherwise.

    :param name: preset the options started from (``"treppenromme"`` or ``"rum500"``).
    :param hand_size: cards dealt to each player with 3 or 4 players (RULES §2.2).
    :param hand_size_two_players: cards dealt to each player with 2 players (RULES §2.2).
    :param dealer_plays_first: the dealer plays first, else the player left of the dealer (§2.4).
    :param corner_runs: runs may turn the corner through the ace, K-A-2 (RULES §3.2).
    :param ace_set: value of an ace in a set (RULES §3.3).
    :param ace_high: value of an ace as the highest card of a run, after the K.
    :param ace_middle: value of an ace turning the corner, K-A-2 (only with ``corner_runs``).
    :param ace_low: value of an ace as the lowest card of a run, before the 2.
    :param ace_hand: value of an ace left in hand at the end of a deal.
    :param must_use_taken: the deepest staircase card taken must be played at once (RULES §4.2).
    :param going_out_credit: the player going out books the opponents' hand values (§6.2).
    :param romme_double: that credit (and ``hand_penalty``) doubles after a Rommé (§6.2).
    :param hand_penalty: cards left in hand are deducted from their holder (§6.2, §6.3).
    :param stock_exhausted: ``"end"`` the deal, or ``"reshuffle"`` the staircase (RULES §6.4).
    :param max_turns: turns after which a deal is cut off as a truncation (RULES §6.5).
    :param target: game total in points that ends a game (RULES §7.1).
    :param max_deals: deals after which a game that has not ended (RULES §7.1: nobody reached
        the target with one highest total) is cut off, reported as a truncation. Games of
        random players take about 5 deals with 2 players and 20-30 with 4 (at most 49 in 60
        seeded games); the default, 200, only stops games in which nobody scores.
    """

    name: str = "treppenromme"
    hand_size: int = 7
    hand_size_two_players: int = 7
    dealer_plays_first: bool = True
    corner_runs: bool = True
    ace_set: int = 15
    ace_high: int = 10
    ace_middle: int = 5
    ace_low: int = 1
    ace_hand: int = 15
    must_use_taken: bool = False
    going_out_credit: bool = True
    romme_double: bool = True
    hand_penalty: bool = False
    stock_exhausted: str = "end"
    max_turns: int = 300
    target: int = 500
    max_deals: int = 200

    def cards_dealt(self, num_players: int) -> int:
        """Cards dealt to each of ``num_players`` players (RULES §2.2)."""
        return self.hand_size_two_players if num_players == 2 else self.hand_size

    def overrides(self) -> dict[str, Any]:
        """The options that differ from the preset :attr:`name` (RULES §8): what
        ``make_rules(self.name, **self.overrides())`` needs to rebuild these rules (a record's
        ``rules_options``, a tournament's ``rules.options``).

        :return: option name -> value, empty for a preset as it is.
        """
        preset = PRESETS[self.name]
        return {name: getattr(self, name) for name in OPTION_NAMES if getattr(self, name) != getattr(preset, name)}

    def check_players(self, num_players: int) -> None:
        """Check that a deal for ``num_players`` is possible under these rules.

        :raises ValueError: for an impossible option value (also when this object was built
            directly rather than by :func:`make_rules`, RULES §8), a player count outside 2..4 or a
            deal that leaves no stock.
        """
        _validate(self)
        if (
            isinstance(num_players, bool)
            or not isinstance(num_players, int)
            or not MIN_PLAYERS <= num_players <= MAX_PLAYERS
        ):
            raise ValueError(f"num_players={num_players!r} is not allowed: {MIN_PLAYERS} to {MAX_PLAYERS} players")
        dealt = self.cards_dealt(num_players) * num_players
        if dealt + 2 > NUM_CARDS:
            raise ValueError(
                f"dealing {self.cards_dealt(num_players)} cards to {num_players} players uses "
                f"{dealt} of {NUM_CARDS} cards and leaves no stock (RULES §2.2-2.3); "
                f"at most {(NUM_CARDS - 2) // num_players} cards each"
            )


PRESETS: dict[str, Rules] = {
    "treppenromme": Rules(),
    "rum500": Rules(
        name="rum500",
        hand_size_two_players=13,
        dealer_plays_first=False,
        corner_runs=False,
        ace_high=15,
        ace_middle=15,
        must_use_taken=True,
        going_out_credit=False,
        romme_double=False,
        hand_penalty=True,
    ),
}

OPTION_NAMES = tuple(f.name for f in dataclasses.fields(Rules) if f.name != "name")


def did_you_mean(unknown: Iterable[str], known: Iterable[str]) -> str:
    """``" (did you mean max_turns?)"`` naming the known name closest to each unknown one
    (:func:`difflib.get_close_matches`), or ``""`` when none is close (for option and key errors)."""
    names = list(known)
    guesses = [match for name in unknown for match in difflib.get_close_matches(name, names, n=1)]
    return f" (did you mean {' / '.join(guesses)}?)" if guesses else ""


def make_rules(rules: str | Rules = "treppenromme", **options: Any) -> Rules:
    """Rules of preset ``rules`` with ``options`` overridden (RULES §8).

    :param rules: a preset name (``"treppenromme"``, ``"rum500"``) or a :class:`Rules` object.
    :param options: any field of :class:`Rules` except ``name``.
    :return: the frozen rules object.
    :raises ValueError: for an unknown preset, an unknown option (listing the valid ones) or an
        impossible value.
    """
    if isinstance(rules, Rules):
        if not options:
            return rules  # already built: the one object travels on
        base = rules
    elif rules in PRESETS:
        base = PRESETS[rules]
    else:
        raise ValueError(f"unknown rules preset {shorten(rules)}; choose one of {sorted(PRESETS)}")
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        hint = did_you_mean(unknown, OPTION_NAMES)
        names = ", ".join(shorten(name, 40) for name in unknown[:10])
        raise ValueError(f"unknown rules option(s) [{names}]{hint}; valid options: {list(OPTION_NAMES)}")
    result = dataclasses.replace(base, **options)
    _validate(result)
    return result


def _validate(rules: Rules) -> None:
    for f in dataclasses.fields(Rules):
        value = getattr(rules, f.name)
        expected = {"str": str, "int": int, "bool": bool}[str(f.type)]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ValueError(f"rules option {f.name}={shorten(value)} must be of type {expected.__name__}")
    if rules.stock_exhausted not in STOCK_EXHAUSTED_MODES:
        raise ValueError(
            f"rules option stock_exhausted={shorten(rules.stock_exhausted)}; "
            f"choose one of {list(STOCK_EXHAUSTED_MODES)}"
        )
    for name in ("hand_size", "hand_size_two_players", "max_turns", "target", "max_deals"):
        if getattr(rules, name) < 1:
            raise ValueError(f"rules option {name}={getattr(rules, name)} must be at least 1")
    if rules.hand_size_two_players * 2 + 2 > NUM_CARDS:
        raise ValueError(
            f"hand_size_two_players={rules.hand_size_two_players} leaves no stock for 2 players "
            f"(at most {(NUM_CARDS - 2) // 2})"
        )
