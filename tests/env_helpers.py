"""Helpers for the environment and observation tests: stacked decks, random play, hidden-card swaps.

A stacked deck names the hands, the first staircase card and the top stock cards a test needs; the
other cards fill the remaining places in card-index order, so every stacked deck is deterministic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from tests import rules_helpers
from treppen_env.actions import parse_action
from treppen_env.cards import bits_to_cards, cards_to_bits, parse_card
from treppen_env.engine import GameState
from treppen_env.rules import make_rules

CONFIGS = [(n, preset) for n in (2, 3, 4) for preset in ("treppenromme", "rum500")]
PHASES = ("draw", "meld", "deal_over")


def stack_deck(
    num_players: int,
    rules: str = "treppenromme",
    dealer: int = 0,
    hands: dict[int, Sequence[str]] | None = None,
    staircase: str | None = None,
    stock: Sequence[str] = (),
    **options: object,
) -> list[str]:
    """A 52-card deck (top first) dealing ``hands`` to their seats (docs/ARCHITECTURE.md "Environment"): one
    card at a time clockwise from the seat left of ``dealer``, then the first staircase card, then
    the stock top first. Places not named are filled in card-index order."""
    return rules_helpers.stack_deck(num_players, make_rules(rules, **options), dealer, hands, staircase, stock)


def play_texts(env, *texts: str) -> None:
    """Step ``env`` with the actions written as text (``"draw"``, ``"meld 5S 5H 5D"``, ...)."""
    for text in texts:
        env.step(parse_action(text))


def random_action(obs: dict, rng: np.random.Generator) -> int:
    """A uniformly random legal action of the mask in ``obs``."""
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


def play_out(env, rng: np.random.Generator, on_step=None) -> dict[str, tuple]:
    """Play a reset env to the end with random legal actions via ``agent_iter``; return each agent's
    final ``last()`` (observation, reward, termination, truncation, info). ``on_step(env)`` is called
    before every live decision."""
    final = {}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        if term or trunc:
            final[agent] = (obs, reward, term, trunc, info)
            env.step(None)
            continue
        if on_step is not None:
            on_step(env)
        env.step(random_action(obs, rng))
    return final


def swap_hidden(state: GameState, seat: int, rng: np.random.Generator) -> GameState:
    """A copy of ``state`` that differs only in what ``seat`` cannot see (docs/ARCHITECTURE.md "Observations"):
    the stock order and the opponents' unseen hand cards are shuffled together and dealt back in
    the same sizes; cards publicly known to be in a hand (taken from the staircase) stay there."""
    other = state.clone()
    opponents = [s for s in range(state.num_players) if s != seat]
    unseen = {}
    for s in opponents:
        assert state.known[s] & ~state.hands[s] == 0, "known cards must be in the hand"
        unseen[s] = state.hands[s] & ~state.known[s]
    pool = list(state.stock) + [c for s in opponents for c in bits_to_cards(unseen[s])]
    pool = [int(c) for c in rng.permutation(pool)]
    for s in opponents:
        k = unseen[s].bit_count()
        other.hands[s] = state.known[s] | cards_to_bits(pool[:k])
        pool = pool[k:]
    other.stock = pool
    other._mask_valid = False  # the hands were edited behind the engine's back
    return other


def expected_view(state: GameState, seat: int) -> dict:
    """What :func:`treppen_env.observation.decode` must give for ``seat``, from the engine state
    (seats relative to ``seat``; melds sorted, since decode orders them its own way)."""
    n = state.num_players
    rel = [(seat + k) % n for k in range(n)]
    return {
        "hand": tuple(bits_to_cards(state.hands[seat])),
        "staircase": tuple(state.staircase),
        "melds": sorted(((m.owner - seat) % n, m.kind, m.cards) for m in state.melds),
        "known": tuple(tuple(bits_to_cards(state.known[s])) for s in rel[1:]),
        "hand_sizes": tuple(state.hands[s].bit_count() for s in rel),
        "stock_size": len(state.stock),
        "phase": PHASES[state.phase],
        "points": tuple(state.points[s] for s in rel),
        "totals": tuple(state.totals[s] for s in rel),
        "dealer": (state.dealer - seat) % n,
        "to_move": (state.current - seat) % n,
        "num_players": n,
        "must_use": None if state.must_use < 0 else state.must_use,
        "banned": None if state.banned < 0 else state.banned,
        "laid_before": tuple(state.laid_before[s] for s in rel),
    }


def view_dict(view) -> dict:
    """A :class:`treppen_env.observation.PublicView` as a dict comparable with :func:`expected_view`."""
    out = dataclasses.asdict(view)
    out["melds"] = sorted((m["owner"], m["kind"], tuple(m["cards"])) for m in view.melds)
    return out


def cards(text: str) -> tuple[int, ...]:
    """Card indices of space-separated card text, in the given order."""
    return tuple(parse_card(c) for c in text.split())


# Scenario B (2 players, treppenromme, dealer 0 plays first, RULES §2.4): player_0 melds a set and a
# run and discards the drawn 6H; player_1 then takes that single card (may not discard it, §4.4).
B_HANDS = {0: "5S 5H 5D 9C TC JC QC".split(), 1: "5C KH KD KS 7H 8C 4S".split()}
B_DECK = stack_deck(2, hands=B_HANDS, staircase="2S", stock=["6H", "3C"])
B_TURN_1 = ("draw", "meld 5S 5H 5D", "meld 9C TC JC", "discard 6H")

# Scenario T (3 players, treppenromme, 8 cards each, dealer 0 plays first): a table with a run that
# turns the corner and grows at both ends by other players' lay-offs (J-Q-K-A-2-3-4 of hearts,
# RULES §3.2, §4.3), a 4-card set completed by another player, and two adjacent club runs that stay
# separate melds (§3.5). Then player_0 takes the top two staircase cards (3S 4S, public, §4.1).
T_HANDS = {
    0: "KH AH 2H 5S 5H 5D 9S 8S".split(),
    1: "6C 7C 8C QH 3H 5C JD 4D".split(),
    2: "9C TC JC JH 4H AC 2D 7S".split(),
}
T_DECK = stack_deck(3, hands=T_HANDS, staircase="6S", stock=["2S", "3S", "4S"], hand_size=8)
T_PLAY = (
    "draw",
    "meld KH AH 2H",
    "meld 5S 5H 5D",
    "discard 2S",
    "draw",
    "meld 6C 7C 8C",
    "layoff QH low",
    "layoff 3H high",
    "layoff 5C set",
    "discard 3S",
    "draw",
    "meld 9C TC JC",
    "layoff JH low",
    "layoff 4H high",
    "discard 4S",
    "take 2",
)


def scenario_t(**kwargs):
    """The env of scenario T after its script (player_0 to meld or discard)."""
    import treppen_env

    env = treppen_env.env(num_players=3, hand_size=8, **kwargs)
    env.reset(options={"deck": T_DECK, "dealer": 0})
    play_texts(env, *T_PLAY)
    return env
