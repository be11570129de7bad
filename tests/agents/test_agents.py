"""Agents (docs/ARCHITECTURE.md "Agents"): legality over random deals, greedy behaviour in built positions and
against random play on duplicate deals, the human agent with scripted input, the policy agent on a
tiny model, and ``agents.load``.

Built positions use stacked decks (``reset(options={"deck", "dealer"})``). With 2 players and
dealer 0 in ``treppenromme`` seat 0 plays first (RULES §2.4).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import treppen_env
from tests.env_helpers import play_texts, stack_deck
from treppen import agents
from treppen.agents import Agent, GreedyAgent, HumanAgent, PolicyAgent, RandomAgent
from treppen.agents.human import format_moves, render_view
from treppen.arena.match import play_match
from treppen_env.actions import DRAW, action_to_str, encode_take, parse_action
from treppen_env.cards import parse_card
from treppen_env.observation import decode

CONFIGS = [(n, preset) for preset in ("treppenromme", "rum500") for n in (2, 3, 4)]


def play_deal(env: Any, seats: Sequence[Agent], deck: Any = None, dealer: int = 0, seed: int | None = None) -> dict:
    """Play one deal of ``env`` with ``seats[i]`` in seat i, checking every action against the mask;
    return the final info of player_0."""

    def check(env: Any, seat: int, obs: dict, action: int) -> None:
        assert isinstance(action, int), f"{seats[seat]!r} returned {type(action)}"
        assert obs["action_mask"][action] == 1, f"illegal {action_to_str(action)}"

    options = None if deck is None else {"deck": deck, "dealer": dealer}
    return play_match(env, seats, seed=seed, options=options, on_step=check).infos[0]


def run_turn(env: Any, agent: Agent) -> list[str]:
    """Let ``agent`` play the whole turn of the player to move; return its actions as text."""
    mover = env.agent_selection
    texts = []
    while env.agents and env.agent_selection == mover and not env.terminations[mover]:
        action = agent.act(env.observe(mover))
        texts.append(action_to_str(action))
        env.step(action)
    return texts


# ---------------------------------------------------------------------------- legality


@pytest.mark.parametrize("num_players,preset", CONFIGS)
def test_every_agent_plays_legal_actions(num_players: int, preset: str) -> None:
    """Greedy (with and without the preset, with exploration) and random agents, in every seat,
    return only masked actions over many random deals; deals end normally."""
    env = treppen_env.raw_env(num_players=num_players, rules=preset)
    pool = [
        GreedyAgent(seed=1, rules=preset),
        GreedyAgent(seed=2),
        GreedyAgent(seed=3, rules=preset, epsilon=0.2),
        RandomAgent(seed=4),
    ]
    outcomes = set()
    for deal in range(12):
        seats = [pool[(deal + i) % len(pool)] for i in range(num_players)]
        info = play_deal(env, seats, seed=1000 * num_players + deal)
        outcomes.add(info["outcome"])
    assert outcomes <= {"went_out", "romme", "stock_exhausted", "max_turns"}
    assert outcomes & {"went_out", "romme"}


def test_greedy_is_deterministic_given_its_seed() -> None:
    """Same seeds, same deal: the same actions (also with epsilon exploration)."""
    traces = []
    for _ in range(2):
        env = treppen_env.raw_env(num_players=3, rules="rum500")
        seats = [GreedyAgent(seed=7, epsilon=0.3), GreedyAgent(seed=8, rules="rum500"), RandomAgent(seed=9)]
        traces.append(play_match(env, seats, seed=11).actions)
    assert traces[0] == traces[1]


# ---------------------------------------------------------------------------- strength


def duplicate_match(preset: str, deals: int, seed: int) -> np.ndarray:
    """Greedy vs random on duplicate 2-player deals (each deck and dealer played with the seats
    swapped): greedy's zero-sum reward (points minus the opponent's, / 100) per game."""
    env = treppen_env.raw_env(num_players=2, rules=preset)
    rng = np.random.default_rng(seed)
    greedy, rand = GreedyAgent(seed=0, rules=preset), RandomAgent(seed=0)
    rewards = []
    for _ in range(deals):
        deck = rng.permutation(52).tolist()
        dealer = int(rng.integers(2))
        for greedy_seat in (0, 1):
            seats = [greedy, rand] if greedy_seat == 0 else [rand, greedy]
            points = play_deal(env, seats, deck, dealer)["deal_points"]
            mine, theirs = points[f"player_{greedy_seat}"], points[f"player_{1 - greedy_seat}"]
            rewards.append((mine - theirs) / 100)
    return np.array(rewards)


@pytest.mark.parametrize(("preset", "margin", "wins"), [("treppenromme", 6071, 54), ("rum500", 3080, 45)])
def test_greedy_beats_random_on_duplicate_deals(preset: str, margin: int, wins: int) -> None:
    """30 seeded decks in both seatings: greedy's point margin over random and its won games of 60
    (about +1.0 and +0.5 a game)."""
    rewards = duplicate_match(preset, deals=30, seed=2024)
    assert (len(rewards), round(100 * rewards.sum()), int((rewards > 0).sum())) == (60, margin, wins)


# ---------------------------------------------------------------------------- built positions


def built_env(preset: str, num_players: int, dealer: int, **deck_args: Any) -> Any:
    env = treppen_env.raw_env(num_players=num_players, rules=preset)
    deck = stack_deck(num_players, preset, dealer, **deck_args)
    env.reset(options={"deck": deck, "dealer": dealer})
    return env


@pytest.mark.parametrize("rules", ["treppenromme", None])
def test_greedy_goes_out_when_it_can(rules: str | None) -> None:
    """Seat 0 holds 5H-8H, KS KD and 2C; the stock gives KC: it melds both and discards the 2C,
    going out Rommé (RULES §6.1-6.2)."""
    env = built_env(
        "treppenromme",
        2,
        0,
        hands={0: ["5H", "6H", "7H", "8H", "KS", "KD", "2C"]},
        staircase="9D",
        stock=["KC"],
    )
    texts = run_turn(env, GreedyAgent(rules=rules))
    assert texts[0] == "draw"
    assert set(texts[1:3]) == {"meld 5H 6H 7H 8H", "meld KS KD KC"}
    assert texts[3:] == ["discard 2C"]
    assert env.infos["player_0"]["went_out"] == "player_0"
    assert env.infos["player_0"]["outcome"] == "romme"


def test_greedy_goes_out_by_melding_everything_rum500() -> None:
    """rum500, 3 players (7 cards): the single staircase card 9H completes 6H-9H and the hand
    is then 6H-9H + QS QD QC: taking it and melding everything goes out."""
    env = built_env(
        "rum500",
        3,
        2,
        hands={0: ["6H", "7H", "8H", "QS", "QD", "QC", "2S"]},
        staircase="9H",
    )
    # Seat 0 (left of dealer 2) plays first. The 2S must go: melds plus one discard.
    texts = run_turn(env, GreedyAgent(rules="rum500"))
    assert texts[0] == "take 1"
    assert texts[1] == "meld 6H 7H 8H 9H"
    assert texts[-1] == "discard 2S"
    assert env.infos["player_0"]["went_out"] == "player_0"


def _staircase_position(
    hand0: list[str],
    preset: str = "treppenromme",
    dealer: int = 0,
    num_players: int = 2,
    first: str = "7D",
    discards: Sequence[str] = ("QS", "TH"),
) -> Any:
    """Seat 0 (first to play) holds ``hand0``; the staircase starts with ``first`` and every seat
    then draws the stock's top card and discards it, so seat 0 next sees ``first`` under
    ``discards``."""
    env = built_env(preset, num_players, dealer, hands={0: hand0}, staircase=first, stock=list(discards))
    for card in discards:
        play_texts(env, "draw", f"discard {card}")
    assert env.agent_selection == "player_0"
    assert decode(env.observe("player_0")).staircase == tuple(parse_card(c) for c in (first, *discards))
    return env


def test_greedy_takes_deep_when_it_completes_a_meld() -> None:
    """Staircase 7D QS TH (TH on top), hand 7S 7H ...: taking 3 gives 7S 7H 7D (21 points) for two
    extra cards, and greedy melds it at once (RULES §4.1)."""
    env = _staircase_position(["7S", "7H", "2C", "4D", "9C", "JD", "KH"])
    texts = run_turn(env, GreedyAgent(rules="treppenromme"))
    assert texts[0] == "take 3"
    assert "meld 7S 7H 7D" in texts


def test_greedy_does_not_take_deep_for_nothing() -> None:
    """The same staircase, but no staircase card fits the hand: draw from the stock."""
    env = _staircase_position(["8S", "3H", "2C", "AD", "9C", "JD", "KH"])
    assert GreedyAgent(rules="treppenromme").act(env.observe("player_0")) == DRAW


def test_greedy_does_not_take_deep_for_a_small_meld_under_junk() -> None:
    """2D at the bottom under KS QC JH TC KD 9H: the 2-2-2 meld (6 points) is not worth five
    high cards; greedy draws from the stock."""
    env = _staircase_position(
        ["2S", "2H", "5C", "8D", "4H", "AC", "6S"], first="2D", discards=("KS", "QC", "JH", "TC", "KD", "9H")
    )
    assert GreedyAgent(rules="treppenromme").act(env.observe("player_0")) == DRAW


@pytest.mark.parametrize("rules", ["rum500", None])
def test_greedy_takes_deep_and_uses_the_card_rum500(rules: str | None) -> None:
    """rum500, 3 players: staircase 7D 2S 3H 4C; taking 4 must meld the 7D (RULES §4.2), and
    greedy does it."""
    env = _staircase_position(
        ["7S", "7H", "2C", "5D", "9C", "JD", "KH"],
        preset="rum500",
        dealer=2,
        num_players=3,
        discards=("2S", "3H", "4C"),
    )
    obs = env.observe("player_0")
    assert obs["action_mask"][encode_take(1)] == 0  # 4C cannot be used at once
    texts = run_turn(env, GreedyAgent(rules=rules))
    assert texts[:2] == ["take 4", "meld 7S 7H 7D"]


def _discard_position(opponent_takes: bool) -> Any:
    """Seat 0 holds 9S 6D 2H 3H 4H 5C 5S and will draw 3D. Before, either seat 1 took 9D 9C from
    the staircase (so it is known to hold them), or both seats drew and discarded other cards."""
    hands = {0: ["9S", "6D", "2H", "3H", "4H", "5C", "5S"], 1: ["KH", "2S", "4S", "6C", "TD", "JC", "QH"]}
    if opponent_takes:
        env = built_env("treppenromme", 2, 0, hands=hands, staircase="9D", stock=["9C", "3D"])
        play_texts(env, "draw", "discard 9C", "take 2", "discard KH")
    else:
        env = built_env("treppenromme", 2, 0, hands=hands, staircase="KD", stock=["TC", "QD", "3D"])
        play_texts(env, "draw", "discard TC", "draw", "discard QD")
    return env


def test_greedy_discard_avoids_feeding_an_opponent() -> None:
    """Without information greedy sheds its highest isolated card (9S); when the next player is
    known to hold 9D 9C, it keeps the 9S and sheds the 6D instead."""
    plain = run_turn(_discard_position(opponent_takes=False), GreedyAgent(rules="treppenromme"))
    assert plain == ["draw", "meld 2H 3H 4H", "discard 9S"]
    warned = run_turn(_discard_position(opponent_takes=True), GreedyAgent(rules="treppenromme"))
    assert warned == ["draw", "meld 2H 3H 4H", "discard 6D"]


# ---------------------------------------------------------------------------- human


def test_human_agent_reasks_until_legal() -> None:
    """Bad text, an illegal move and a wrong number are answered with the reason; then the move
    is read by its text, and in the next phase by its number."""
    env = built_env(
        "treppenromme", 2, 0, hands={0: ["5H", "6H", "7H", "8H", "KS", "KD", "2C"]}, staircase="9D", stock=["KC"]
    )
    lines = iter(["nonsense", "discard 2C", "meld 5H 6H 7H", "take 5", "42", "draw"])
    out: list[str] = []
    human = HumanAgent(input_fn=lambda prompt: next(lines), output_fn=out.append)
    assert human.act(env.observe("player_0")) == DRAW
    text = "\n".join(out)
    assert "cannot read action 'nonsense'" in text
    assert "discard 2C: draw from the stock or take from the staircase first" in text
    assert "take 5: the staircase holds only 1 card" in text
    assert "there is no move 42" in text
    assert "your hand: KS 5H 6H 7H 8H KD 2C" in text
    env.step(DRAW)
    obs = env.observe("player_0")
    moves = [int(a) for a in np.flatnonzero(obs["action_mask"])]
    lines = iter(["take 1", str(moves.index(parse_action("meld KS KD KC")))])
    out.clear()
    assert human.act(obs) == parse_action("meld KS KD KC")
    assert "take 1: you already drew this turn" in "\n".join(out)


def test_human_agent_quit_ends_the_game() -> None:
    """'quit' (like the end of input) raises EOFError, which ``treppen play`` turns into a clean exit."""
    env = built_env("treppenromme", 2, 0, hands={0: ["5H", "6H", "7H", "8H", "KS", "KD", "2C"]})
    human = HumanAgent(input_fn=lambda prompt: "quit", output_fn=lambda text: None)
    with pytest.raises(EOFError, match="quit"):
        human.act(env.observe("player_0"))


def test_human_rendering_shows_the_public_view_only() -> None:
    env = built_env("treppenromme", 3, 0, hands={0: ["5H", "6H", "7H", "8H", "KS", "KD", "2C"]})
    text = render_view(decode(env.observe("player_0")))
    assert "your hand: KS 5H 6H 7H 8H KD 2C" in text
    assert "P+1: 7 cards" in text and "P+2: 7 cards" in text
    moves = format_moves([0, 1, 2, 3, 4], width=30)
    assert moves.splitlines()[0].split() == ["0)", "draw", "3)", "take", "3"]


# ---------------------------------------------------------------------------- load


def test_load_builds_named_agents() -> None:
    assert isinstance(agents.load("random", seed=1), RandomAgent)
    greedy = agents.load("greedy", seed=1, rules="rum500")
    assert isinstance(greedy, GreedyAgent) and greedy.rules.name == "rum500"
    assert isinstance(agents.load("human"), HumanAgent)
    assert agents.load(greedy) is greedy


def test_load_errors(tmp_path: Any) -> None:
    with pytest.raises(
        ValueError,
        match=r"unknown agent spec 'grredy'.*\['greedy', 'human', 'ismcts', 'llm', 'planner', 'random', 'rollout'\]",
    ):
        agents.load("grredy")
    missing = tmp_path / "nope.zip"
    with pytest.raises(FileNotFoundError, match=r"nope\.zip"):
        agents.load(str(missing))
    with pytest.raises(ValueError, match=r"final_model\.zip"):
        agents.load(tmp_path)
    with pytest.raises(ValueError, match="epsilon"):
        agents.load("greedy", epsilon=2.0)


def test_import_agents_does_not_import_torch() -> None:
    code = "import sys, agents; assert 'torch' not in sys.modules and 'sb3_contrib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------- policy


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: Any) -> Any:
    """A MaskablePPO trained for 64 steps against a random opponent, saved as run/model.zip."""
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")
    env = treppen_env.SingleAgentEnv(RandomAgent(seed=0), num_players=2)
    model = sb3_contrib.MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=32,
        n_epochs=1,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [16]},
    )
    model.learn(64)
    run = tmp_path_factory.mktemp("run")
    model.save(run / "model.zip")
    return run


def test_policy_agent_plays_legal_actions(tiny_model: Any) -> None:
    by_folder = agents.load(tiny_model)
    by_path = agents.load(str(tiny_model / "model.zip"), seed=3, deterministic=False)
    assert isinstance(by_folder, PolicyAgent) and by_folder.deterministic
    env = treppen_env.raw_env(num_players=3, rules="rum500")
    for deal in range(3):
        play_deal(env, [by_folder, by_path, GreedyAgent(rules="rum500")], seed=deal)
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    probs = by_folder.action_probabilities(obs)
    assert probs.shape == (898,) and probs.sum() == pytest.approx(1.0, abs=1e-5)
    assert np.all(probs[obs["action_mask"] == 0] == 0)
    assert by_folder.act(obs) == int(np.argmax(probs))
    sampled = [PolicyAgent(tiny_model / "model.zip", seed=5, deterministic=False).act(obs) for _ in range(2)]
    assert sampled[0] == sampled[1]


def test_policy_agent_rejects_a_model_for_other_spaces() -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")
    import gymnasium as gym

    class Tiny(gym.Env):
        observation_space = gym.spaces.Box(0, 1, (3,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
            return np.zeros(3, np.float32), {}

        def step(self, action: int) -> tuple:
            return np.zeros(3, np.float32), 0.0, True, False, {}

        def action_masks(self) -> np.ndarray:
            return np.ones(2, bool)

    model = sb3_contrib.MaskablePPO("MlpPolicy", Tiny(), n_steps=8, batch_size=8, device="cpu")
    with pytest.raises(ValueError, match=r"expects observations of shape \(3,\)"):
        PolicyAgent(model)
