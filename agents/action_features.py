"""Action and card features for the action-feature policy (:mod:`treppen.train.common.action_feature_net`).

Every action of the ``Discrete(898)`` space (docs/ARCHITECTURE.md "Actions") is described by what it does, so
actions that move the same cards share what a network learns about them (DouZero encodes
an action by its cards, ygo-agent scores a feature vector per action against the state):

- :func:`action_table` - a static (898, ACTION_FEATURES) float32 table per rules: kind, the cards
  the action moves (52 bits), staircase depth, lay-off target, meld shape and the points it books.
- :data:`ACTION_CARDS` - the static (898, 52) 0/1 matrix of the cards each action moves out of the
  hand (a take moves staircase cards, which depend on the state: see :func:`take_cards`).
- :data:`CARD_OBS_INDEX` - for each card, the observation entries that describe it and its
  neighbours (same suit two ranks either side, the other cards of its rank), so a card-structured
  network reads its per-card input with one gather.

NumPy only: the torch module is :mod:`treppen.train.common.action_feature_net`.
"""

from __future__ import annotations

import numpy as np

from treppen.agents.heuristic_features import heuristic_features
from treppen_env.actions import (
    DISCARD_BASE,
    DRAW,
    LAYOFF_BASE,
    MELD_BASE,
    NUM_ACTIONS,
    TAKE_BASE,
    TARGETS,
)
from treppen_env.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS, RANK_POINTS, make_card, rank_of, suit_of
from treppen_env.melds import MELDS, NUM_SET_MELDS, allowed_melds, layoff_value, meld_values
from treppen_env.observation import SLICES
from treppen_env.rules import Rules, make_rules

KIND_NAMES = ("draw", "take", "meld_set", "meld_run", "layoff", "discard")
#: Take depths with a one-hot feature of their own; deeper takes share the last one.
DEPTH_BINS = 7
POINTS_SCALE = 100.0
#: Columns of :func:`action_table`, in order.
ACTION_COLUMNS: tuple[str, ...] = (
    *(f"kind_{k}" for k in KIND_NAMES),
    *(f"card_{c}" for c in range(NUM_CARDS)),
    "depth",
    *(f"depth_{d}" for d in range(1, DEPTH_BINS + 1)),
    *(f"target_{t}" for t in TARGETS),
    "meld_length",
    "meld_allowed",
    "points",
    "cards_moved",
)
ACTION_FEATURES = len(ACTION_COLUMNS)
_COL = {name: i for i, name in enumerate(ACTION_COLUMNS)}


def _action_cards() -> np.ndarray:
    cards = np.zeros((NUM_ACTIONS, NUM_CARDS), dtype=np.float32)
    for i, meld in enumerate(MELDS):
        cards[MELD_BASE + i, list(meld.cards)] = 1
    for card in range(NUM_CARDS):
        cards[LAYOFF_BASE + len(TARGETS) * card : LAYOFF_BASE + len(TARGETS) * (card + 1), card] = 1
        cards[DISCARD_BASE + card, card] = 1
    return cards


#: Cards each action moves out of the hand, (898, 52) float32 0/1; zero rows for draw and takes.
ACTION_CARDS = _action_cards()


def action_table(rules: str | Rules = "treppenromme") -> np.ndarray:
    """Static features of every action under ``rules``: float32 array of shape (898, ACTION_FEATURES).

    Columns (:data:`ACTION_COLUMNS`): kind one-hot (draw, take, meld a set, meld a run, lay off,
    discard); the 52 cards moved; for a take its depth / 52 and a one-hot of depths 1..6 and 7+;
    the lay-off target one-hot (set, low end, high end; RULES §4.3); meld length / 13 and whether
    the rules allow the meld at all (RULES §3.2); the points the action books / 100 (RULES §5:
    meld value, lay-off value, 0 otherwise); the number of cards moved / 13.

    :raises ValueError: for an unknown preset.
    """
    rules = make_rules(rules)
    table = np.zeros((NUM_ACTIONS, ACTION_FEATURES), dtype=np.float32)
    card0 = _COL["card_0"]
    table[:, card0 : card0 + NUM_CARDS] = ACTION_CARDS
    table[:, _COL["cards_moved"]] = ACTION_CARDS.sum(axis=1) / NUM_RANKS
    table[DRAW, _COL["kind_draw"]] = 1
    for depth in range(1, NUM_CARDS + 1):
        a = TAKE_BASE + depth
        table[a, _COL["kind_take"]] = 1
        table[a, _COL["depth"]] = depth / NUM_CARDS
        table[a, _COL[f"depth_{min(depth, DEPTH_BINS)}"]] = 1
    values, allowed = meld_values(rules), allowed_melds(rules)
    for i, meld in enumerate(MELDS):
        a = MELD_BASE + i
        table[a, _COL["kind_meld_set" if i < NUM_SET_MELDS else "kind_meld_run"]] = 1
        table[a, _COL["meld_length"]] = meld.length / NUM_RANKS
        table[a, _COL["meld_allowed"]] = float(allowed[i])
        table[a, _COL["points"]] = values[i] / POINTS_SCALE
    for card in range(NUM_CARDS):
        for target, name in enumerate(TARGETS):
            a = LAYOFF_BASE + len(TARGETS) * card + target
            table[a, _COL["kind_layoff"]] = 1
            table[a, _COL[f"target_{name}"]] = 1
            table[a, _COL["points"]] = layoff_value(rules, card, target) / POINTS_SCALE
        table[DISCARD_BASE + card, _COL["kind_discard"]] = 1
    return table


# --------------------------------------------------------------------------- cards


def _neighbours(card: int) -> list[int]:
    """Same suit at rank offsets -2, -1, +1, +2 (the ace is next to both the 2 and the king), then
    the other three cards of the rank, in suit order."""
    suit, rank = suit_of(card), rank_of(card)
    run = [make_card(suit, (rank + k) % NUM_RANKS) for k in (-2, -1, 1, 2)]
    return run + [make_card(s, rank) for s in range(NUM_SUITS) if s != suit]


def _card_entries(card: int) -> list[int]:
    """Observation entries of one card: hand, staircase depth, table owner (4 seats), table flags
    (7), known by each opponent (3), must-use, banned (RULES §4)."""
    o = SLICES
    return [
        o["hand"].start + card,
        o["staircase"].start + card,
        *range(o["meld_owner"].start + 4 * card, o["meld_owner"].start + 4 * card + 4),
        *range(o["table"].start + 7 * card, o["table"].start + 7 * card + 7),
        *(o["known"].start + k * NUM_CARDS + card for k in range(3)),
        o["must_use"].start + card,
        o["banned"].start + card,
    ]


def _neighbour_entries(card: int) -> list[int]:
    """Entries of a neighbour: hand, staircase depth, in a set, in a run, known by each opponent."""
    o = SLICES
    table = o["table"].start + 7 * card
    return [
        o["hand"].start + card,
        o["staircase"].start + card,
        table,
        table + 1,
        *(o["known"].start + k * NUM_CARDS + card for k in range(3)),
    ]


def _card_obs_index() -> np.ndarray:
    rows = []
    for card in range(NUM_CARDS):
        row = _card_entries(card)
        for other in _neighbours(card):
            row += _neighbour_entries(other)
        rows.append(row)
    return np.array(rows, dtype=np.int64)


#: Observation entries read for each card: int64 array (52, CARD_OBS_FEATURES).
CARD_OBS_INDEX = _card_obs_index()
CARD_OBS_FEATURES = CARD_OBS_INDEX.shape[1]


def card_static_features() -> np.ndarray:
    """Fixed features of each card: rank one-hot (13), suit one-hot (4), hand points / 15;
    float32 array of shape (52, 18)."""
    out = np.zeros((NUM_CARDS, NUM_RANKS + NUM_SUITS + 1), dtype=np.float32)
    for card in range(NUM_CARDS):
        out[card, rank_of(card)] = 1
        out[card, NUM_RANKS + suit_of(card)] = 1
        out[card, -1] = RANK_POINTS[rank_of(card)] / 15.0
    return out


#: The observation's scalar tail (hand sizes ... turn): the global features of a state.
GLOBAL_SLICE = slice(SLICES["hand_sizes"].start, SLICES["turn"].stop)


#: Card-score channels: a card moved by a take, the deepest card of a take, a card melded into a
#: set or a run, laid off onto a set or a run's low or high end, discarded.
CHANNELS = ("taken", "deepest", "meld_set", "meld_run", "layoff_set", "layoff_low", "layoff_high", "discard")
_KIND_CHANNEL = {
    "kind_meld_set": "meld_set",
    "kind_meld_run": "meld_run",
    "target_set": "layoff_set",
    "target_low": "layoff_low",
    "target_high": "layoff_high",
    "kind_discard": "discard",
}


def card_channel_matrix() -> np.ndarray:
    """0/1 float32 matrix (52 * channels, 898) from card scores (52, channels), flattened
    card-major, to actions: column ``a`` sums, over the cards ``a`` moves, their scores in the
    channel of ``a``'s kind (:data:`CHANNELS`; zero columns for the draw and the takes)."""
    table = action_table()
    matrix = np.zeros((NUM_CARDS * len(CHANNELS), NUM_ACTIONS), dtype=np.float32)
    for column, channel in _KIND_CHANNEL.items():
        for action in np.flatnonzero(table[:, _COL[column]]):
            cards = np.flatnonzero(ACTION_CARDS[action])
            matrix[cards * len(CHANNELS) + CHANNELS.index(channel), action] = 1
    return matrix


class NumpyActionFeatureNet:
    """The forward pass of :class:`treppen.train.common.action_feature_net.ActionFeatureNet` in NumPy, for opponent
    snapshots (docs/ARCHITECTURE.md "Training notes": no torch in the env's hot path). Only the logits of the
    asked-for actions are computed.

    :param arrays: the net's parameters as NumPy arrays, named as in its ``state_dict``
        (:func:`treppen.train.sb3.pool.save_snapshot` writes them).
    """

    def __init__(self, arrays: dict[str, np.ndarray]):
        a = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}
        self.card_in: tuple[np.ndarray, np.ndarray] = (
            a["card_in.weight"].T.copy(),
            a["card_in.bias"] + card_static_features() @ a["card_id.weight"].T,
        )
        self.card_global = a["card_global.weight"].T.copy()
        self.state = [(a[f"state.{i}.weight"].T.copy(), a[f"state.{i}.bias"]) for i in (0, 2)]
        self.card_mid = (a["card_mid.weight"].T.copy(), a["card_mid.bias"])
        self.card_state = a["card_state.weight"].T.copy()
        self.card_score = (a["card_score.weight"].T.copy(), a["card_score.bias"])
        hidden = np.maximum(a["action_table"] @ a["action_mlp.0.weight"].T + a["action_mlp.0.bias"], 0)
        per_action = hidden @ a["action_mlp.2.weight"].T + a["action_mlp.2.bias"]  # (898, action_dim + 1)
        self.static = np.ascontiguousarray(per_action[:, :-1])
        self.bias = per_action[:, -1].copy()
        self.state_to_action = a["state_to_action.weight"].T.copy()
        self.channels = np.ascontiguousarray(card_channel_matrix().T)  # (898, 52 * channels)
        #: The heuristic features' layer (``features="heuristic"`` or ``"planner"``), or None.
        self.heuristic: tuple[np.ndarray, ...] | None = None
        #: The planner's settings of those features (``features="planner"``), or None (greedy's).
        self.planner: np.ndarray | None = None
        if "heuristic_values" in arrays:
            self.planner = np.asarray(arrays["heuristic_values"], dtype=np.float64)
        if "heuristic_rules" in arrays:
            self.heuristic = (
                np.asarray(arrays["heuristic_rules"], dtype=np.float64),
                a["heuristic_in.weight"].T.copy(),
                a["heuristic_in.bias"],
                a["heuristic_state.weight"].T.copy(),
                a["heuristic_out.weight"][0].copy(),
                a["heuristic_out.bias"],
            )

    def logits(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Logits of ``actions`` (int array, (k,)) for one observation (969,): float32 (k,).

        A net with heuristic features takes ``actions`` as the legal actions (its mask).
        """
        obs = np.asarray(obs, dtype=np.float32)
        glob = obs[GLOBAL_SLICE]
        w, b = self.card_in
        cards = np.maximum(obs[CARD_OBS_INDEX] @ w + b + glob @ self.card_global, 0)  # (52, card_dim)
        hand = obs[SLICES["hand"]]
        x = np.concatenate([hand @ cards / NUM_RANKS, cards.max(0), glob])
        for w, b in self.state:
            x = np.maximum(x @ w + b, 0)
        w, b = self.card_mid
        cards = np.maximum(cards @ w + b + x @ self.card_state, 0)
        w, b = self.card_score
        scores = cards @ w + b  # (52, channels)
        out = self.static[actions] @ (x @ self.state_to_action) + self.bias[actions]
        out += self.channels[actions] @ scores.ravel()
        takes = (actions > TAKE_BASE) & (actions <= TAKE_BASE + NUM_CARDS)
        if takes.any():  # the staircase cards down to each depth, and the deepest apart (RULES §4.1-4.2)
            depth = np.rint(obs[SLICES["staircase"]] * NUM_CARDS)
            for i in np.flatnonzero(takes):
                d = actions[i] - TAKE_BASE
                on = (depth > 0) & (depth <= d)
                out[i] += (
                    scores[on, CHANNELS.index("taken")].sum() + scores[depth == d, CHANNELS.index("deepest")].sum()
                )
        if self.heuristic is not None:
            row, w_in, b_in, w_state, w_out, b_out = self.heuristic
            mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
            mask[actions] = 1
            features = heuristic_features(obs, mask, row, self.planner)[actions]
            out += np.maximum(features @ w_in + b_in + x @ w_state, 0) @ w_out + b_out
        return out
