"""Search agents: flat Monte Carlo (rollout) and IS-MCTS over the core's kernels (docs/ARCHITECTURE.md "Agents").

No peeking (same observation + seed = same action whatever the hidden cards), only legal actions
in whole deals, budgets respected (exact playout counts; CPU seconds counted in playouts against a fake clock), seeds
repeat, analysis ranks an obviously best move first, batch labelling, specs.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.env_helpers import swap_hidden
from tests.rules_helpers import new_deal
from treppen import agents
from treppen.agents import GreedyAgent, ISMCTSAgent, RolloutAgent, search
from treppen.agents.search import BELIEF_CHUNK, DEFAULT_PLAYOUTS, MoveEstimate
from treppen.arena.match import play_match
from treppen_env import raw_env
from treppen_env.actions import parse_action
from treppen_env.cards import bits_to_cards, cards_to_str
from treppen_env.engine import GameState
from treppen_env.observation import encode
from treppen_env.rules import make_rules


def greedy_position(preset: str, players: int, seed: int, steps: int) -> GameState:
    """The position after ``steps`` greedy moves of a seeded deal (not over)."""
    rules = make_rules(preset)
    state = GameState(rules, players, np.random.default_rng(seed))
    state.deal(0)
    greedy = GreedyAgent(rules=rules)
    for _ in range(steps):
        state.apply(greedy.act(observe(state)))
    assert not state.deal_over
    return state


def observe(state: GameState) -> dict:
    return {"observation": encode(state, state.current), "action_mask": state.legal_mask().copy()}


def discard_position() -> GameState:
    """A 2-player treppenromme position where the mover chooses its discard (a searched choice)."""
    state = greedy_position("treppenromme", 2, 3, 9)
    assert state.legal_mask()[846:].sum() >= 5
    return state


SEARCHERS = {
    "ismcts": lambda seed: ISMCTSAgent(seed=seed, playouts=24),
    "rollout": lambda seed: RolloutAgent(seed=seed, playouts=24),
    "rollout-margin": lambda seed: RolloutAgent(seed=seed, playouts=24, objective="margin"),
    "rollout-halving": lambda seed: RolloutAgent(seed=seed, playouts=24, allocation="halving"),
    "ismcts-all-random": lambda seed: ISMCTSAgent(seed=seed, playouts=24, moves="all", playout="random"),
    "ismcts-widening-mix": lambda seed: ISMCTSAgent(seed=seed, playouts=24, widening=0.5, objective="mix"),
    "ismcts-others-playout": lambda seed: ISMCTSAgent(seed=seed, playouts=24, others="playout"),
}


@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_no_peeking_same_observation_same_action(name: str) -> None:
    """Two positions that look the same to the searcher but hide different cards: same action."""
    state = discard_position()
    rng = np.random.default_rng(0)
    acted = set()
    for trial in range(3):
        other = swap_hidden(state, state.current, rng)
        assert other.hands != state.hands  # the hidden cards really differ
        obs, obs2 = observe(state), observe(other)
        np.testing.assert_array_equal(obs["observation"], obs2["observation"])
        first, second = SEARCHERS[name](trial), SEARCHERS[name](trial)
        action = first.act(obs)
        assert second.act(obs2) == action
        assert first.simulations > 0  # the action was searched, not forced
        acted.add(action)
    assert acted <= set(np.flatnonzero(state.legal_mask()).tolist())


#: The seeded deals of test_search_agents_play_only_legal_actions: (outcome, deal points, actions).
SEARCHED_DEALS = {
    ("treppenromme", 2, "ismcts"): ("went_out", [63, 94], 46),
    ("treppenromme", 2, "rollout"): ("went_out", [63, 60], 47),
    ("rum500", 2, "ismcts"): ("went_out", [113, 91], 47),
    ("rum500", 2, "rollout"): ("went_out", [63, 141], 64),
    ("rum500", 3, "ismcts"): ("went_out", [-38, 19, 77], 36),
    ("rum500", 3, "rollout"): ("went_out", [26, 77, 60], 73),
    ("treppenromme", 4, "ismcts"): ("went_out", [64, 86, 16, 87], 59),
    ("treppenromme", 4, "rollout"): ("went_out", [51, 87, 27, 114], 61),
    ("rum500", 4, "ismcts"): ("stock_exhausted", [88, 56, 10, 28], 78),
    ("rum500", 4, "rollout"): ("went_out", [44, 57, 57, 88], 73),
}


@pytest.mark.parametrize(
    ("preset", "players"), [("treppenromme", 2), ("rum500", 2), ("rum500", 3), ("treppenromme", 4), ("rum500", 4)]
)
def test_search_agents_play_only_legal_actions(preset: str, players: int) -> None:
    """Whole deals against greedy through the match loop (raw_env raises on an illegal action)."""
    env = raw_env(num_players=players, rules=preset)
    for seed, (name, make) in enumerate(
        [
            ("ismcts", lambda: ISMCTSAgent(rules=preset, playouts=6, moves="all")),
            ("rollout", lambda: RolloutAgent(rules=preset, playouts=6)),
        ]
    ):
        seats = [make(), *(GreedyAgent(rules=preset) for _ in range(players - 1))]
        result = play_match(env, seats, seed=seed, agent_seeds=list(range(players)))
        assert (result.outcome, result.deal_points, len(result.actions)) == SEARCHED_DEALS[preset, players, name]


@pytest.mark.parametrize("make", [RolloutAgent, ISMCTSAgent])
def test_budget_in_playouts_is_counted_exactly(make: type) -> None:
    obs = observe(discard_position())
    for budget in (1, 7, 40):
        agent = make(seed=0, playouts=budget)
        agent.act(obs)
        assert agent.simulations == budget
        assert sum(e.playouts for e in make(seed=0, playouts=budget).analyse(obs)) == budget
    assert make(seed=0).playouts == DEFAULT_PLAYOUTS
    assert make(seed=0, seconds=1).playouts is None  # a time budget alone: no playout cap


def test_rollout_plays_every_move_on_every_determinization() -> None:
    """Flat Monte Carlo: playout t is move t % m on determinization t // m (common random numbers)."""
    state = discard_position()
    moves = int(state.legal_mask()[846:].sum())  # plan moves at a discard: every legal discard
    estimates = RolloutAgent(seed=0, playouts=3 * moves + 2).analyse(observe(state))
    assert len(estimates) == moves
    assert sorted(e.playouts for e in estimates) == [3] * (moves - 2) + [4, 4]


def test_rollout_halving_shares_the_playouts_by_rounds() -> None:
    """Sequential halving over the 7 discards: 2 halvings, a third of 100 playouts each (4 a move
    for 7, then 8 a move for 4), then the last 2 moves share the other 40; the move played is the
    better of those 2 (one playout more for one of them still counts as the last round)."""
    obs = observe(discard_position())
    for budget, last in ((100, [32, 32]), (101, [32, 33])):
        estimates = RolloutAgent(seed=0, playouts=budget, allocation="halving").analyse(obs)
        assert sorted(e.playouts for e in estimates) == [4, 4, 4, 12, 12, *last]
        finalists = [e for e in estimates if e.playouts >= 32]
        assert estimates[0] == max(finalists, key=lambda e: e.win_rate)
        assert RolloutAgent(seed=0, playouts=budget, allocation="halving").act(obs) == estimates[0].action


def simulation_clock(monkeypatch: pytest.MonkeyPatch, agent: RolloutAgent | ISMCTSAgent, cost: float) -> None:
    """A fake CPU clock for the search's ``seconds`` budget: each playout the agent has run costs ``cost`` s."""
    monkeypatch.setattr(search, "cpu_clock", lambda: agent.simulations * cost)


@pytest.mark.parametrize("make", [RolloutAgent, ISMCTSAgent])
def test_budget_in_cpu_seconds_is_kept(make: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search stops at the first look at the clock (every CHUNK = 16 playouts) once its seconds
    are spent: at 1/8 s a playout, 2.5 s are spent after 20 playouts, seen after 32; 6 s are spent
    exactly at the look after 48."""
    obs = observe(discard_position())
    for seconds, simulations in ((2.5, 32), (6.0, 48)):
        agent = make(seed=0, seconds=seconds)
        simulation_clock(monkeypatch, agent, 0.125)
        agent.act(obs)
        assert agent.simulations == simulations


class FakeClock:
    """A wall clock that moves ``step`` seconds at every look: a search's looks counted exactly,
    whatever else the machine runs (tests assert no real time)."""

    def __init__(self, step: float):
        self.now, self.step, self.looks = 0.0, step, 0

    def __call__(self) -> float:
        now = self.now
        self.now += self.step
        self.looks += 1
        return now


@pytest.mark.parametrize("make", [RolloutAgent, ISMCTSAgent])
def test_a_deadline_ends_the_search_at_its_first_look_past_it(make: type) -> None:
    """The clock is read at the call (0.0) and between chunks of 16 playouts, once each of the 7
    discards has had one: 0.25, 0.5 and 0.75 run a chunk each, 1.0 is the deadline (and the
    analysis's beliefs, read at 1.25 after their first chunk of deals, stop there). So the search
    overruns its deadline by at most one chunk of playouts (about 1-2 ms a core; the real figure
    under load is bench_serve_load.py's), however busy the machine is."""
    obs = observe(discard_position())
    agent = make(seed=0, deadline=1.0)
    agent.clock = FakeClock(0.25)
    estimates = agent.analyse(obs)
    assert agent.clock.looks == 5 + 1 and agent.simulations == 16 + 3 * 16 and agent.cut_short
    counted = estimates.beliefs * BELIEF_CHUNK  # past the deadline, the beliefs count one chunk of deals
    np.testing.assert_allclose(counted, np.round(counted), atol=1e-9)
    assert (estimates.playouts, estimates.cut_short) == (64, True)
    assert sum(e.playouts for e in estimates) == 64 and min(e.playouts for e in estimates) >= 1
    agent.clock = FakeClock(0.25)
    agent.act(obs)
    assert (agent.clock.looks, agent.simulations, agent.cut_short) == (5, 64, True)


@pytest.mark.parametrize("make", [RolloutAgent, ISMCTSAgent])
def test_a_passed_deadline_still_plays_every_move_once(make: type) -> None:
    """The floor: however late it is (``deadline=0``, or a clock far past it), every searched move
    gets a determinization: the first chunk of 16 playouts covers the 7 discards."""
    obs = observe(discard_position())
    agent = make(seed=0, deadline=0)
    estimates = agent.analyse(obs)
    assert (agent.simulations, estimates.cut_short) == (16, True)
    assert len(estimates) == 7 and min(e.playouts for e in estimates) >= 1
    late = make(seed=0, deadline=0.5, playouts=500)
    late.clock = FakeClock(100.0)
    assert late.act(obs) in np.flatnonzero(obs["action_mask"]) and late.simulations == 16


@pytest.mark.parametrize("make", [RolloutAgent, ISMCTSAgent])
def test_a_deadline_not_reached_changes_nothing(make: type) -> None:
    """Under a deadline that the playouts beat, the analysis is the one without it (same seed):
    a server's hint on an idle machine is the analysis of its spec."""
    obs = observe(discard_position())
    plain = make(seed=4, playouts=100).analyse(obs)
    timed = make(seed=4, playouts=100, deadline=600)
    timed.clock = FakeClock(0.0)
    found = timed.analyse(obs)
    assert found == plain and (found.playouts, found.cut_short) == (100, False)
    np.testing.assert_array_equal(found.beliefs, plain.beliefs)


def test_a_time_budget_under_a_huge_playout_cap_allocates_a_small_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The IS-MCTS tree starts at TREE_BLOCK nodes and doubles when full (a tree sized for 10**6
    playouts would not fit in memory)."""
    agent = ISMCTSAgent(seed=0, playouts=10**6, seconds=1.0)
    simulation_clock(monkeypatch, agent, 0.125)
    agent.act(observe(discard_position()))
    assert agent.simulations == 16  # one chunk, then the clock is read


def test_forced_moves_are_not_searched() -> None:
    """With one searched choice (greedy lays in plan mode, or one legal action) nothing is simulated."""
    state = greedy_position("treppenromme", 2, 3, 0)
    agent = ISMCTSAgent(seed=0, playouts=5)
    mask = np.zeros_like(state.legal_mask())
    mask[0] = 1
    assert agent.act({"observation": encode(state, state.current), "action_mask": mask}) == 0
    assert agent.simulations == 0


@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_same_seed_same_action(name: str) -> None:
    state = greedy_position("treppenromme", 2, 5, 4)
    obs = observe(state)
    agent = SEARCHERS[name](11)
    first = agent.act(obs)
    agent.reset(seed=11)
    assert agent.act(obs) == first
    assert SEARCHERS[name](11).act(obs) == first


def going_out_position() -> GameState:
    """Seat 0 (the dealer, first to play) holds 5-6-7-8H, 9C 9D and KS; the staircase shows 9S.

    Taking the 9S lets it meld 5-6-7-8H and 9-9-9 and go out by discarding the KS in its first
    turn (a Rommé, RULES §6.1-6.2): the deal is won for certain; the stock almost never does it.
    """
    return new_deal(hands={0: ["5H", "6H", "7H", "8H", "9C", "9D", "KS"]}, staircase="9S")


@pytest.mark.parametrize("make", [RolloutAgent, ISMCTSAgent])
def test_analyse_ranks_the_obviously_best_move_first(make: type) -> None:
    state = going_out_position()
    estimates = make(seed=0, playouts=200).analyse(observe(state))
    take = parse_action("take 1")
    best = estimates[0]
    assert best.action == take
    assert isinstance(best, MoveEstimate) and best.move == "take 1"
    assert (best.win_rate, best.win_se) == (1.0, 0.0)
    assert best.margin > max(e.margin for e in estimates[1:]) and best.margin_se >= 0
    assert all(e.win_rate < 1.0 for e in estimates[1:])
    assert sum(e.playouts for e in estimates) == 200
    assert best.to_dict()["action"] == take


def test_analyse_of_a_single_move_has_no_playouts() -> None:
    state = going_out_position()
    state.apply(parse_action("take 1"))  # greedy now lays: one searched move
    (only,) = RolloutAgent(seed=0, playouts=10).analyse(observe(state))
    assert only.greedy and only.playouts == 0 and np.isnan(only.win_rate) and only.to_dict()["win_se"] is None


def test_analyse_counts_the_known_cards_it_is_given() -> None:
    """The cards of the hand the opponent saw taken (RULES §4.1) are not in the observation; given
    as ``known``, its greedy playouts know them (a fresh agent remembers no takes: none known)."""
    state = greedy_position("treppenromme", 2, 1, 19)
    known = list(bits_to_cards(state.known[state.current]))
    assert cards_to_str(known) == "TD" and known[0] in set(bits_to_cards(state.hands[state.current]))
    obs = observe(state)
    fresh = RolloutAgent(seed=0, playouts=20).analyse(obs)
    assert len(fresh) == 2 and RolloutAgent(seed=0, playouts=20).analyse(obs, known=[]) == fresh
    told = RolloutAgent(seed=0, playouts=20).analyse(obs, known=known)
    assert [e.action for e in told] == [e.action for e in fresh] and told != fresh


def test_label_searches_a_batch_like_act() -> None:
    positions = [discard_position(), greedy_position("treppenromme", 2, 5, 4), going_out_position()]
    observations = [observe(s) for s in positions]
    labels = RolloutAgent(seed=3, playouts=30).label(observations)
    assert labels.dtype == np.int64 and labels.shape == (3,)
    assert labels[2] == parse_action("take 1")
    for obs, action in zip(observations, labels, strict=True):
        assert obs["action_mask"][action]
    first = RolloutAgent(seed=3, playouts=30)
    assert [first.act(o) for o in observations[:1]] == labels[:1].tolist()


def test_specs_build_search_agents_with_their_budgets() -> None:
    agent = agents.load("ismcts,seconds=0.25,playouts=500,playout=random,c=1,objective=margin,widening=0.5", seed=2)
    assert isinstance(agent, ISMCTSAgent)
    s = agent.settings
    assert (s.seconds, agent.playouts, s.playout, s.c) == (0.25, 500, "random", 1.0)
    assert (s.objective, s.widening) == ("margin", 0.5)
    rollout = agents.load("rollout,playouts=8,playout=greedy,rules=rum500,moves=all")
    assert isinstance(rollout, RolloutAgent)
    assert (rollout.playouts, rollout.rules.name, rollout.settings.moves) == (8, "rum500", "all")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ismcts,budget=3", r"agent 'ismcts' has no setting 'budget'; allowed: seed=None, rules="),
        ("ismcts,playout=smart", "playout='smart'; choose one of"),
        ("rollout,objective=points", r"objective='points'; choose one of \['win', 'margin', 'mix'\]"),
        ("rollout,playouts=0", "playouts=0 must be a whole number of at least 1"),
        ("ismcts,seconds=0", "seconds=0 must be positive"),
        ("rollout,seconds=nan", "seconds=nan must be positive and finite"),
        ("rollout,playouts=1.5", r"playouts=1\.5 must be a whole number of at least 1"),
        ("ismcts,c=nan", "c=nan must be non-negative and finite"),
        ("rollout,bias=inf", "bias=inf must be a finite number"),
        ("rollout,allocation=ucb", r"allocation='ucb'; choose one of \['uniform', 'halving'\]"),
        ("ismcts,others=greedy", r"others='greedy'; choose one of \['search', 'playout'\]"),
        ("ismcts,widening=1", r"widening=1.0 must be in \[0, 1\)"),
    ],
)
def test_bad_search_settings_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        agents.load(spec)


def test_rollout_keeps_greedys_choice_unless_a_move_beats_it_by_the_bias() -> None:
    state = discard_position()
    obs = observe(state)
    greedy = GreedyAgent(rules="treppenromme").act(obs)
    cautious = RolloutAgent(seed=0, playouts=20, bias=1e9)
    assert cautious.act(obs) == greedy
    assert cautious.simulations == 20


def test_search_under_other_rules_than_the_game_is_a_clear_error() -> None:
    """The root sample reproduces the mask exactly under the right rules; other rules are caught."""
    state = next(  # a draw where rum500 forbids a take that treppenromme allows (RULES §4.2)
        s
        for n in range(80)
        if 1 <= sum((s := greedy_position("rum500", 2, 1, n)).legal_mask()[1:53]) < len(s.staircase)
    )
    with pytest.raises(ValueError, match=r"does not follow the rules 'treppenromme'.*ismcts,rules=rum500"):
        ISMCTSAgent(seed=0).act(observe(state))
    assert ISMCTSAgent(seed=0, rules="rum500", playouts=2).act(observe(state)) in state.legal_actions()


def test_prior_moves_the_visit_counts_toward_the_policy() -> None:
    """PUCT at the root (``ismcts,prior=...``): the move the prior favours gets more of the
    playouts than without the prior, and the root's other moves fewer in total."""
    obs = observe(discard_position())
    favoured = int(np.flatnonzero(obs["action_mask"])[-1])
    spec = "ismcts,playouts=400,prior=tests.agents.prior_stub:LastMovePrior"
    visits = {}
    for name, agent in (("plain", ISMCTSAgent(seed=0, playouts=400)), ("prior", agents.load(spec, seed=0))):
        visits[name] = {e.action: e.playouts for e in agent.analyse(obs)}
    assert set(visits["plain"]) == set(visits["prior"])
    assert visits["prior"][favoured] > 2 * visits["plain"][favoured]
    assert visits["prior"][favoured] > max(n for a, n in visits["prior"].items() if a != favoured)


def test_prior_must_give_action_probabilities() -> None:
    with pytest.raises(ValueError, match="gives no action probabilities; give a model"):
        agents.load("ismcts,prior=greedy")
