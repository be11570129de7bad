"""Search loops as kernels: flat Monte Carlo with common random numbers and single-observer IS-MCTS.

Both search the moves of one observer from a root state sampled once from its observation
(:func:`treppen_env.determinize.sample_state`): every simulation first deals what the observer
cannot see afresh (:func:`treppen_env.agent_core.playout_kernels.redeal`), so the search never reads a hidden
card, then plays the deal out with each seat's playout policy
(:func:`treppen_env.agent_core.playout_kernels.play_to_end`).

Searched moves (:func:`candidates`), the greedy heuristic's choice always first:

- :data:`PLAN`: the choices that decide a turn, the draw (the stock, the staircase's top card, or
  a deeper take whose deepest card the hand can play at once, RULES §4.1-4.2) and the discard
  (RULES §4.4); melds and lay-offs are played as the heuristic plans them (:func:`greedy_lays`);
- :data:`ALL`: every legal action.

A simulation's result for a seat (:func:`treppen_env.agent_core.playout_kernels.outcome`) is its score against
the other seats, as the ratings count it (``arena.ratings``: more points 1, equal points 0.5,
averaged over the other seats; for 2 players the deal's win, draw or loss), and its point margin,
its deal points minus the mean of the others' (RULES §6.2), in hundreds of points. With a value
network, a flat Monte Carlo simulation may stop after some turns and count the network's
estimate of the win score instead (:func:`treppen_env.agent_core.playout_kernels.finish`). The search maximises the
:data:`WIN`, :data:`MARGIN` or :data:`MIX` (their mean) objective (:func:`objective_value`).

The kernels run a given number of simulations and keep all their state in arrays the caller
holds, so a caller with a time budget calls them again until the time is spent, and a seeded
search with a playout budget is deterministic. Statistics per move are rows of :data:`NUM_STATS`
float64 columns (``S_*``): simulations, the sums of the win score and its square, the sums of the
margin and its square.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from treppen_env.agent_core import belief_kernels, playout_kernels
from treppen_env.core import kernels
from treppen_env.core.bits import bit
from treppen_env.core.cache import kernel
from treppen_env.core.generator import next_random
from treppen_env.core.layout import (
    CURRENT,
    DEAL_OVER,
    HAND,
    MELD,
    NUM_CARDS,
    PHASE,
    STAIRS,
    STAIRS_LEN,
    Position,
    Tables,
)

#: Searched moves (see the module docstring).
PLAN, ALL = 0, 1
MOVES = {"plan": PLAN, "all": ALL}
#: Objectives (see the module docstring).
WIN, MARGIN, MIX = 0, 1, 2
OBJECTIVES = {"win": WIN, "margin": MARGIN, "mix": MIX}

#: Legal actions (the length of the legal mask); a candidate list holds at most this many.
NUM_ACTIONS = kernels.A_DISCARD_BASE + NUM_CARDS

#: Columns of a statistics row.
S_COUNT, S_WIN, S_WIN_SQ, S_MARGIN, S_MARGIN_SQ = range(5)
NUM_STATS = 5

#: Columns of the IS-MCTS tree's int64 node table; its float64 table holds :data:`NUM_STATS`
#: statistics columns from the node's player's side, then the objective's sum (``N_VALUE``).
N_ACTION, N_PLAYER, N_CHILD, N_SIBLING, N_AVAIL = range(5)
NODE_COLS = 5
N_VALUE = NUM_STATS
NODE_VALUE_COLS = NUM_STATS + 1
NO_NODE = -1


# ------------------------------------------------------------------------------ bundles
# The kernels take their arguments in bundles (named tuples, built by the agent once per decision
# or per call), besides a state's three arrays as one tuple (``root``, ``det``, ``sim``, ``pos``:
# :data:`treppen_env.agent_core.Position`) and the rules core's ``tables``
# (:data:`treppen_env.agent_core.Tables`).
class Search(NamedTuple):
    """A search's settings (a kernel bundle)."""

    #: The searching seat.
    observer: int
    #: :data:`PLAN` or :data:`ALL`.
    moves: int
    #: Whether the other seats' moves are searched too (IS-MCTS).
    search_others: bool
    #: :data:`WIN`, :data:`MARGIN` or :data:`MIX`.
    objective: int
    #: UCB1's exploration constant, in the objective's units (IS-MCTS).
    c: float
    #: Progressive widening's exponent (IS-MCTS; 0: every move).
    widening: float
    #: PUCT's constant at the root (IS-MCTS; 0 for none).
    c_prior: float
    #: How the seats play out.
    playout: playout_kernels.Playout


class Tree(NamedTuple):
    """An IS-MCTS tree (:func:`new_tree`) with its scratch (a kernel bundle)."""

    #: int64 (capacity, NODE_COLS): the node table (``N_*`` columns).
    nodes: np.ndarray
    #: float64 (capacity, NODE_VALUE_COLS): each node's statistics and objective's sum.
    values: np.ndarray
    #: int64 (1,): the nodes in use.
    size: np.ndarray
    #: int64 (capacity,): the nodes of an iteration's path.
    path: np.ndarray
    #: int64 (NUM_ACTIONS,): the searched moves of a node.
    cand: np.ndarray
    #: float64 (NUM_ACTIONS,): a policy's probabilities of the root's moves (zeros without one).
    prior: np.ndarray


class Rounds(NamedTuple):
    """One call of flat Monte Carlo (a kernel bundle)."""

    #: int64 (m,): the root's searched moves.
    choices: np.ndarray
    #: int64: the indices into ``choices`` of the moves still in, the first ``num_active``.
    active: np.ndarray
    num_active: int
    #: uint64 (1,): the current determinization's generator.
    det_rng: np.ndarray
    #: The simulations done so far and the number to run now.
    done: int
    todo: int
    #: float64 (m, NUM_STATS): each move's statistics.
    stats: np.ndarray


class SearchWork(NamedTuple):
    """The arrays a search works in (a kernel bundle)."""

    #: The playout scratch (:func:`treppen_env.agent_core.playout_kernels.scratch`).
    playout: playout_kernels.Scratch
    #: The beliefs that deal the determinizations, and their scratch (:mod:`treppen_env.agent_core.belief_kernels`).
    beliefs: belief_kernels.Beliefs
    belief_work: belief_kernels.BeliefWork


# ------------------------------------------------------------------------------ moves
@kernel
def greedy_lays(
    pos: Position,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    playout: playout_kernels.Playout,
    rng: np.ndarray,
    work: playout_kernels.Scratch,
) -> None:
    """With :data:`PLAN`: play the heuristic's melds and lay-offs for the seat to move until it
    would discard or the deal is over (RULES §4.3-4.5; the heuristic of ``playout``)."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    while i64[PHASE] == MELD:
        action = playout_kernels.greedy_choice(u64, i8, i64, tab, playout.settings, work)
        if action >= kernels.A_DISCARD_BASE:
            return
        playout_kernels.advance(u64, i8, i64, tab, meld_bits, action, rng, work)


@kernel
def candidates(
    pos: Position,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    moves: int,
    playout: playout_kernels.Playout,
    work: playout_kernels.Scratch,
    out: np.ndarray,
) -> int:
    """Write the searched moves of the seat to move into ``out`` (int64, at least
    :data:`NUM_ACTIONS`), the heuristic's choice (that of ``playout``) first, and return their
    number (see the module docstring; the legal mask in ``work`` must be the state's)."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    mask = work.mask[:NUM_ACTIONS]
    first = playout_kernels.greedy_choice(u64, i8, i64, tab, playout.settings, work)
    out[0] = first
    n = 1
    if moves == ALL:
        for action in range(NUM_ACTIONS):
            if mask[action] and action != first:
                out[n] = action
                n += 1
        return n
    if i64[PHASE] == MELD:
        if first < kernels.A_DISCARD_BASE:  # a lay: the heuristic's, never searched
            return 1
        for action in range(kernels.A_DISCARD_BASE, NUM_ACTIONS):
            if mask[action] and action != first:
                out[n] = action
                n += 1
        return n
    hand = u64[HAND + i64[CURRENT]]
    taken = np.uint64(0)
    length = i64[STAIRS_LEN]
    for depth in range(1, length + 1):
        card = i8[STAIRS + length - depth]
        taken |= bit(card)
        action = kernels.A_TAKE_BASE + depth
        if action != first and mask[action]:
            if depth == 1 or kernels.can_play(u64, tab, meld_bits, card, hand | taken):
                out[n] = action
                n += 1
    if first != kernels.A_DRAW and mask[kernels.A_DRAW]:
        out[n] = kernels.A_DRAW
        n += 1
    return n


# ------------------------------------------------------------------------------ results
@kernel
def objective_value(win: float, margin: float, objective: int) -> float:
    """The value a search maximises: the win score, the margin, or their mean (:data:`MIX`)."""
    if objective == WIN:
        return win
    if objective == MARGIN:
        return margin
    return 0.5 * (win + margin)


@kernel
def add_result(stats: np.ndarray, win: float, margin: float) -> None:
    """Count one simulation's result in a statistics row."""
    stats[S_COUNT] += 1.0
    stats[S_WIN] += win
    stats[S_WIN_SQ] += win * win
    stats[S_MARGIN] += margin
    stats[S_MARGIN_SQ] += margin * margin


@kernel
def determinize(
    root: Position,
    det: Position,
    tables: Tables,
    observer: int,
    rng: np.ndarray,
    work: SearchWork,
) -> None:
    """``det`` (u64, i8, i64) becomes a copy of ``root`` with what ``observer`` cannot see dealt
    afresh, uniformly or weighted by the beliefs in ``work``
    (:func:`treppen_env.agent_core.belief_kernels.determinize`), its legal mask in ``work.playout``."""
    tab, meld_bits = tables.tab, tables.meld_bits
    belief_kernels.determinize(root, det, tab, meld_bits, observer, rng, work.beliefs, work.belief_work)
    playout_kernels.start(det.u64, det.i8, det.i64, tab, meld_bits, work.playout)


# ------------------------------------------------------------------------------ flat Monte Carlo
@kernel
def flat_monte_carlo(
    root: Position,
    det: Position,
    sim: Position,
    tables: Tables,
    search: Search,
    rounds: Rounds,
    rng: np.ndarray,
    work: SearchWork,
) -> None:
    """Simulations ``done`` to ``done + todo - 1`` of flat Monte Carlo over the root's active
    moves (the :class:`Rounds` ``rounds``).

    Simulation ``t`` plays move ``j = active[t % num_active]`` of ``choices`` on determinization
    ``t // num_active`` (a new one in ``det`` whenever ``t % num_active == 0``) and plays it out in
    ``sim``; every move of a determinization is played out with the same random numbers
    (``det_rng``, common random numbers), so moves are compared on the same cards and the same
    reshuffles. With :data:`PLAN` the observer's lays after the move are the heuristic's. The
    observer's result is added to ``stats[j]``.

    :param root, det, sim: ``(u64, i8, i64)`` arrays: the root sample (unchanged), the current
        determinization and a simulation's state; ``det`` and ``det_rng`` carry over between calls.
    :param search: the :class:`Search` settings (its ``observer``, ``moves`` and ``playout``).
    :param rng: the search's generator (uint64 (1,)); ``work``: the :class:`SearchWork`.
    """
    tab, meld_bits = tables.tab, tables.meld_bits
    choices, active, num_active = rounds.choices, rounds.active, rounds.num_active
    det_rng, stats = rounds.det_rng, rounds.stats
    sim_rng = np.empty(1, dtype=np.uint64)
    scratch = work.playout
    for t in range(rounds.done, rounds.done + rounds.todo):
        k = t % num_active
        j = active[k]
        if k == 0:
            determinize(root, det, tables, search.observer, rng, work)
            det_rng[0] = next_random(rng)
        belief_kernels.copy_position(det, sim)
        sim_rng[0] = det_rng[0]
        playout_kernels.start(sim.u64, sim.i8, sim.i64, tab, meld_bits, scratch)
        playout_kernels.advance(sim.u64, sim.i8, sim.i64, tab, meld_bits, choices[j], sim_rng, scratch)
        if search.moves == PLAN:
            greedy_lays(sim, tab, meld_bits, search.playout, sim_rng, scratch)
        win, margin = playout_kernels.finish(sim, tab, meld_bits, search.playout, sim_rng, scratch, search.observer)
        add_result(stats[j], win, margin)


# ------------------------------------------------------------------------------ IS-MCTS
@kernel
def new_tree(capacity: int, prior: np.ndarray) -> Tree:
    """An empty IS-MCTS :class:`Tree` for ``capacity - 1`` expansions (node 0 is the root, its size
    1), its scratch of that capacity, and the root's ``prior`` (float64 (NUM_ACTIONS,))."""
    nodes = np.full((capacity, NODE_COLS), NO_NODE, dtype=np.int64)
    nodes[0, N_AVAIL] = 1
    return Tree(
        nodes=nodes,
        values=np.zeros((capacity, NODE_VALUE_COLS)),
        size=np.ones(1, dtype=np.int64),
        path=np.zeros(capacity, dtype=np.int64),
        cand=np.empty(NUM_ACTIONS, dtype=np.int64),
        prior=prior,
    )


@kernel
def _child(nodes: np.ndarray, node: int, action: int) -> int:
    """The child of ``node`` reached by ``action``, or NO_NODE."""
    child = nodes[node, N_CHILD]
    while child != NO_NODE and nodes[child, N_ACTION] != action:
        child = nodes[child, N_SIBLING]
    return child


@kernel
def _expand(nodes: np.ndarray, size: np.ndarray, node: int, action: int, player: int) -> int:
    """A new child of ``node`` for ``action`` by ``player`` (the tree has room); its index."""
    child = size[0]
    size[0] += 1
    nodes[child, N_ACTION] = action
    nodes[child, N_PLAYER] = player
    nodes[child, N_AVAIL] = 1
    nodes[child, N_CHILD] = NO_NODE
    nodes[child, N_SIBLING] = nodes[node, N_CHILD]
    nodes[node, N_CHILD] = child
    return child


@kernel
def may_expand(values: np.ndarray, node: int, legal_children: int, widening: float) -> bool:
    """Progressive widening: a node visited ``n`` times may have ``1 + floor(n ** widening)``
    children legal in this determinization (``legal_children`` of them are in the tree;
    ``widening == 0``: every candidate); candidates are tried in :func:`candidates`' order, the
    heuristic's choice first."""
    if widening <= 0.0:
        return True
    return legal_children < 1 + math.floor(values[node, S_COUNT] ** widening)


@kernel
def _select(nodes: np.ndarray, values: np.ndarray, node: int, cand: np.ndarray, n: int, c: float) -> int:
    """The child of ``node`` among the legal moves ``cand[:n]`` with the best UCB1 score, where an
    action's exploration term counts the visits in which it was legal (``N_AVAIL``)."""
    best, best_score = NO_NODE, -np.inf
    for i in range(n):
        child = _child(nodes, node, cand[i])
        if child != NO_NODE:
            visits = values[child, S_COUNT]
            score = values[child, N_VALUE] / visits + c * math.sqrt(math.log(nodes[child, N_AVAIL]) / visits)
            if score > best_score:
                best, best_score = child, score
    return best


@kernel
def _descend(tree: Tree, node: int, n: int, c: float, widening: float, player: int) -> tuple[int, bool]:
    """The next node below ``node`` of the :class:`Tree` ``tree`` for the legal moves
    ``tree.cand[:n]``: a new child for the first untried move when the tree has room and widening
    allows (:func:`may_expand`), else the UCB1 choice (:func:`_select`). Counts the availability
    of the children in the tree. Returns (the node, or NO_NODE when the tree is full and nothing
    here was tried; whether expanded)."""
    nodes, values, size, cand = tree.nodes, tree.values, tree.size, tree.cand
    untried, legal_children = -1, 0
    for i in range(n):
        child = _child(nodes, node, cand[i])
        if child != NO_NODE:
            nodes[child, N_AVAIL] += 1
            legal_children += 1
        elif untried < 0:
            untried = cand[i]
    expand = untried >= 0 and size[0] < nodes.shape[0]
    expand = expand and (legal_children == 0 or may_expand(values, node, legal_children, widening))
    if expand:
        return _expand(nodes, size, node, untried, player), True
    return _select(nodes, values, node, cand, n, c), False


@kernel
def _select_prior(tree: Tree, node: int, n: int, c_prior: float, player: int) -> tuple[int, bool]:
    """PUCT at the root (Silver et al. 2017) of the :class:`Tree` ``tree``: the move among
    ``cand[:n]`` of best
    ``Q + c_prior * prior[a] * sqrt(N) / (1 + n_a)``, where ``Q`` is the move's mean objective,
    or the root's mean (the first one 0.5) for a move not yet tried, ``N`` the root's visits and
    ``n_a`` the move's. A chosen move not yet in the tree is expanded (when it has room).
    Returns (the child, or NO_NODE when the tree is full and the move untried; whether expanded)."""
    nodes, values, size, cand, prior = tree.nodes, tree.values, tree.size, tree.cand, tree.prior
    total = values[node, S_COUNT]
    parent_q = values[node, N_VALUE] / total if total else 0.5
    root = math.sqrt(total if total > 1.0 else 1.0)
    best, best_score = -1, -np.inf
    for i in range(n):
        child = _child(nodes, node, cand[i])
        visits = values[child, S_COUNT] if child != NO_NODE else 0.0
        q = values[child, N_VALUE] / visits if visits else parent_q
        score = q + c_prior * prior[cand[i]] * root / (1.0 + visits)
        if score > best_score:
            best, best_score = i, score
    child = _child(nodes, node, cand[best])
    if child != NO_NODE:
        return child, False
    if size[0] >= nodes.shape[0]:
        return NO_NODE, False
    return _expand(nodes, size, node, cand[best], player), True


@kernel
def _backup(tree: Tree, depth: int, i64: np.ndarray, observer: int, objective: int) -> None:
    """Add the finished deal's result to the root (the observer's) and to every node of the
    :class:`Tree`'s path (its player's)."""
    nodes, values, path = tree.nodes, tree.values, tree.path
    win, margin = playout_kernels.outcome(i64, observer)
    add_result(values[0], win, margin)
    values[0, N_VALUE] += objective_value(win, margin, objective)
    for k in range(depth):
        node = path[k]
        win, margin = playout_kernels.outcome(i64, nodes[node, N_PLAYER])
        add_result(values[node], win, margin)
        values[node, N_VALUE] += objective_value(win, margin, objective)


@kernel
def _unsearched(
    pos: Position,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    search: Search,
    lays: bool,
    rng: np.ndarray,
    work: playout_kernels.Scratch,
) -> None:
    """Play the moves before the next searched one: without ``search.search_others`` the other
    seats' moves by their playout policy, then with ``lays`` the heuristic's lays of the seat to
    move."""
    i64 = pos.i64
    if not search.search_others:
        while i64[CURRENT] != search.observer and i64[PHASE] != DEAL_OVER:
            playout_kernels.policy_move(pos, tab, meld_bits, search.playout, rng, work)
    if lays:
        greedy_lays(pos, tab, meld_bits, search.playout, rng, work)


@kernel
def ismcts(
    root: Position,
    det: Position,
    tables: Tables,
    search: Search,
    tree: Tree,
    rng: np.ndarray,
    count: int,
    work: SearchWork,
) -> None:
    """``count`` iterations of single-observer information-set MCTS (Cowling, Powley & Whitehouse
    2012) on the :class:`Tree` ``tree`` (:func:`new_tree`), with the :class:`Search` settings
    ``search``.

    Each iteration deals a new determinization (:func:`determinize`), descends through the seats'
    searched moves (:func:`candidates`) by UCB1 with availability counts (:func:`_select`),
    expands one new move (:func:`may_expand`), plays the deal out and adds each seat's result to
    the nodes where that seat moved (:func:`_backup`). Without ``search_others`` only the
    observer's moves are searched and the other seats play their playout policy in the tree too
    (the search models them as that policy). ``work`` holds the playout scratch and the beliefs
    that deal the determinizations (:class:`SearchWork`). ``search.c`` is the exploration
    constant, in the objective's units; with ``search.c_prior > 0`` the root's move is chosen by
    PUCT over ``tree.prior`` (a policy's probabilities of the root's moves, :func:`_select_prior`)
    instead of trying every move once, then UCB1.
    """
    tab, meld_bits = tables.tab, tables.meld_bits
    nodes, path, cand = tree.nodes, tree.path, tree.cand
    scratch = work.playout
    for _ in range(count):
        determinize(root, det, tables, search.observer, rng, work)
        u64, i8, i64 = det.u64, det.i8, det.i64
        node, depth = 0, 0
        while i64[PHASE] != DEAL_OVER:
            lays = depth > 0 and search.moves == PLAN
            _unsearched(det, tab, meld_bits, search, lays, rng, scratch)
            if i64[PHASE] == DEAL_OVER:
                break
            n = candidates(det, tab, meld_bits, search.moves, search.playout, scratch, cand)
            if depth == 0 and search.c_prior > 0.0:  # the root: the same moves in every determinization
                node, expand = _select_prior(tree, node, n, search.c_prior, i64[CURRENT])
            else:
                node, expand = _descend(tree, node, n, search.c, search.widening, i64[CURRENT])
            if node == NO_NODE:  # the tree is full and nothing here was tried: play on
                break
            path[depth] = node
            depth += 1
            playout_kernels.advance(u64, i8, i64, tab, meld_bits, nodes[node, N_ACTION], rng, scratch)
            if expand:
                if search.moves == PLAN:
                    greedy_lays(det, tab, meld_bits, search.playout, rng, scratch)
                break
        if i64[PHASE] != DEAL_OVER:
            playout_kernels.play_to_end(det, tab, meld_bits, search.playout, rng, scratch)
        _backup(tree, depth, i64, search.observer, search.objective)


@kernel
def root_children(nodes: np.ndarray, values: np.ndarray, actions: np.ndarray, stats: np.ndarray) -> int:
    """The root's children: their actions into ``actions`` (int64) and statistics rows into
    ``stats`` (float64 (., NUM_STATS)); their number."""
    n = 0
    child = nodes[0, N_CHILD]
    while child != NO_NODE:
        actions[n] = nodes[child, N_ACTION]
        stats[n] = values[child, :NUM_STATS]
        n += 1
        child = nodes[child, N_SIBLING]
    return n
