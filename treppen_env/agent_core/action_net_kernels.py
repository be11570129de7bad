"""Kernels of the action net: every row's legal actions as feature rows, and the net that
scores them, so that the net plays inside the kernels: as an agent (:mod:`treppen.agents.action_net`)
and as the frozen snapshots that the batched learner (``backend: kernel``) seats as opponents.

**Legal-action rows.** :func:`legal_features` lists each position's legal actions (ascending) and
describes each by one float32 row of ``F`` columns: its static features (the rules' action table
of :func:`treppen.agents.action_features.action_table`, ``S`` columns) and, when ``F = S + 9``,
what a heuristic computes about it in this position (:mod:`treppen_env.agent_core.feature_kernels`,
read from the observation and mask only): the greedy heuristic, or the planner when the context
holds the planner's values (``features: planner``; the context is a :class:`FeatureContext`). The
rows of a batch lie one after another, without padding, in a :class:`LegalRows`:

===========  ===========================  =====================================================
array        dtype and shape              meaning
===========  ===========================  =====================================================
``acts``     int64 (N,)                   the legal actions of position ``b`` in
                                          ``acts[offsets[b]:offsets[b + 1]]``, ascending
``feats``    float32 (N, F)               their feature rows, in the same places
``offsets``  int64 (B + 1,)               where each position's legal actions start; ``N`` (at
                                          least the legal actions of the batch) at the end
===========  ===========================  =====================================================

**The action net** (:class:`treppen.train.kernel.action_net_torch.ActionNet` trains it in torch). With ``h``
the state's ``H`` hidden units and ``x`` an action's feature row::

    h     = tanh(W0' obs + b0)                       the state (obs float32 (969,), mostly zeros)
    z     = relu(Wa' x + Wh' h + ba)                 the action's ``D`` units
    logit = wo . z + u . x                           (the linear term lets ``u`` favour the heuristic's pick)
    value = vw . h + vb                              the learner's expected reward (torch only)

Its weights are one flat float32 array ``w`` laid out by :func:`layout`, with an int64 ``shape``
(:data:`SHAPE_SIZE`,): observation size, ``H``, ``F``, ``D``. The kernels take a *stack* of nets
(several frozen snapshots), a :class:`NetStack`: one net per row of its float32 (P, size)
``weights``, all of one shape.

**In a playout** the net scores one position at a time from the seat to move's observation
(:func:`treppen_env.agent_core.playout_kernels.net_choice`): :func:`position_features` lists that
position's rows and :func:`score_rows` scores them, both in the arrays of a :class:`RowScratch`
allocated once per search (:func:`row_scratch`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from treppen_env.agent_core import greedy_kernels
from treppen_env.agent_core.feature_kernels import NUM_FEATURES, decision_features
from treppen_env.agent_core.policy_value_kernels import NUM_ACTIONS, sample_action
from treppen_env.agent_core.reader import read_observation
from treppen_env.core.cache import kernel

#: Slots of the shape array.
SH_INPUT, SH_HIDDEN, SH_FEATURES, SH_ACTION = range(4)
SHAPE_SIZE = 4
#: Names of the flat weights' tensors, in their order (see :func:`layout`).
TENSORS = ("w0", "b0", "wh", "ba", "wa", "wo", "u", "vw", "vb")


class FeatureContext(NamedTuple):
    """What legal-action rows are computed in (a kernel bundle; :func:`legal_features`)."""

    #: int64: the rules table (:func:`treppen_env.core.tables.rules_table`).
    tab: np.ndarray
    #: float64: the greedy heuristic's settings (:func:`treppen_env.agent_core.greedy_kernels.settings_row`).
    settings: np.ndarray
    #: float64: the heuristic of the feature columns: size 0 the greedy heuristic, else the planner's
    #: values (:func:`treppen_env.agent_core.feature_kernels.decision_features`).
    values: np.ndarray
    #: float32 (898, S): the static action table (:func:`treppen.agents.action_features.action_table`).
    table: np.ndarray


class LegalRows(NamedTuple):
    """The legal actions of a batch, one position's after another's (a kernel bundle; see the
    module docstring)."""

    #: int64 (N,): position ``b``'s legal actions (ascending) in ``acts[offsets[b]:offsets[b + 1]]``.
    acts: np.ndarray
    #: float32 (N, F): their feature rows, in the same places.
    feats: np.ndarray
    #: int64 (B + 1,): where each position's legal actions start; ``N`` at the end.
    offsets: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        """int64 (B,): the legal actions of each position (in Python, not in a kernel)."""
        return np.diff(self.offsets)


class NetStack(NamedTuple):
    """Action nets of one shape, one per row (a kernel bundle; :func:`net_moves`)."""

    #: float32 (P, size): each net's flat weights (:func:`layout`).
    weights: np.ndarray
    #: int64 (:data:`SHAPE_SIZE`,): their shape.
    shape: np.ndarray


def layout(obs_size: int, hidden: int, features: int, action_dim: int) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Where each tensor lies in the flat weights: name -> (offset, shape); ``w0`` (obs_size, H),
    ``b0`` (H,), ``wh`` (H, D), ``ba`` (D,), ``wa`` (F, D), ``wo`` (D,), ``u`` (F,), ``vw`` (H,),
    ``vb`` (1,), and ``size`` (the total, shape ``()``)."""
    shapes = {
        "w0": (obs_size, hidden),
        "b0": (hidden,),
        "wh": (hidden, action_dim),
        "ba": (action_dim,),
        "wa": (features, action_dim),
        "wo": (action_dim,),
        "u": (features,),
        "vw": (hidden,),
        "vb": (1,),
    }
    out, start = {}, 0
    for name in TENSORS:
        out[name] = (start, shapes[name])
        start += int(np.prod(shapes[name]))
    out["size"] = (start, ())
    return out


class RowScratch(NamedTuple):
    """One position's legal-action rows and the arrays the net scores them in (:func:`row_scratch`;
    a kernel bundle)."""

    #: float32 (898, S): the static action table (the ``table`` of :func:`legal_features`' ``ctx``).
    table: np.ndarray
    #: float64: the heuristic whose features the net reads (the ``values`` of :func:`legal_features`' ``ctx``).
    values: np.ndarray
    #: int64 (898,): the legal actions, the first ``n``.
    acts: np.ndarray
    #: float32 (898, F): their feature rows.
    feats: np.ndarray
    #: float32 (898, NUM_FEATURES): the heuristic's features of every action.
    extra: np.ndarray
    #: float64 (H + 2 D,): the net's units (:func:`score_rows`).
    units: np.ndarray


@kernel
def row_scratch(table: np.ndarray, values: np.ndarray, shape: np.ndarray) -> RowScratch:
    """The :class:`RowScratch` of a net of ``shape`` with the static action ``table`` (float32
    (898, S)) and the heuristic ``values`` of its feature columns (as in :func:`legal_features`);
    a net of shape zeros gets empty arrays (no net)."""
    rows = NUM_ACTIONS if shape[SH_FEATURES] else 0
    return RowScratch(
        table=table,
        values=values,
        acts=np.zeros(rows, dtype=np.int64),
        feats=np.zeros((rows, shape[SH_FEATURES]), dtype=np.float32),
        extra=np.zeros((rows, NUM_FEATURES), dtype=np.float32),
        units=np.zeros(shape[SH_HIDDEN] + 2 * shape[SH_ACTION]),
    )


@kernel
def position_features(
    obs: np.ndarray,
    mask: np.ndarray,
    ctx: FeatureContext,
    inputs: greedy_kernels.Inputs,
    work: greedy_kernels.Workspace,
    extra: np.ndarray,
    acts: np.ndarray,
    feats: np.ndarray,
) -> int:
    """One position's legal actions (ascending) into ``acts`` (int64) and their feature rows into
    ``feats`` (float32 (., F)); their number ``n`` (the arrays after it untouched).

    :param obs: the observation (float32 (969,)); ``mask``: its legal mask (int8 (898,)).
    :param ctx: the :class:`FeatureContext`.
    :param inputs, work, extra: scratch: the heuristic's inputs and workspace
        (:mod:`treppen_env.agent_core.greedy_kernels`) and float32 (898, NUM_FEATURES), written when
        ``feats`` has the heuristic's columns.
    """
    table = ctx.table
    static = table.shape[1]
    heuristic = feats.shape[1] == static + NUM_FEATURES
    if heuristic:
        read_observation(obs, inputs)
        decision_features(inputs, mask, ctx.tab, ctx.settings, ctx.values, work, extra)
    k = 0
    for a in range(NUM_ACTIONS):
        if mask[a] == 0:
            continue
        acts[k] = a
        feats[k, :static] = table[a]
        if heuristic:
            feats[k, static:] = extra[a]
        k += 1
    return k


@kernel
def legal_features(
    obs: np.ndarray,
    masks: np.ndarray,
    ctx: FeatureContext,
    rows: LegalRows,
) -> None:
    """Fill ``rows`` (:class:`LegalRows`, see the module docstring) for observations
    (float32 (B, 969)) and their legal masks (int8 (B, >= 898)), each by :func:`position_features`
    in the :class:`FeatureContext` ``ctx``; the heuristic's columns are written when ``rows.feats``
    has ``S + 9`` columns.
    """
    acts, feats, offsets = rows.acts, rows.feats, rows.offsets
    inputs = greedy_kernels.empty_inputs()
    work = greedy_kernels.workspace()
    extra = np.zeros((NUM_ACTIONS, NUM_FEATURES), dtype=np.float32)
    offsets[0] = 0
    for b in range(obs.shape[0]):
        start = offsets[b]
        mask = masks[b, :NUM_ACTIONS]
        offsets[b + 1] = start + position_features(obs[b], mask, ctx, inputs, work, extra, acts[start:], feats[start:])


@kernel
def nonzero_entries(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nonzero entries of observations (float32 (B, n)), row by row, as ``np.nonzero`` lists
    them: their columns (int64 (E,)), their values (float32 (E,)) and each row's number (int64 (B,)).
    The net reads the state through them (the weight rows of these columns, ``h`` below)."""
    rows, width = obs.shape
    counts = np.zeros(rows, dtype=np.int64)
    for b in range(rows):
        for j in range(width):
            if obs[b, j] != 0.0:
                counts[b] += 1
    total = counts.sum()
    cols = np.empty(total, dtype=np.int64)
    values = np.empty(total, dtype=np.float32)
    k = 0
    for b in range(rows):
        for j in range(width):
            if obs[b, j] != 0.0:
                cols[k] = j
                values[k] = obs[b, j]
                k += 1
    return cols, values, counts


@kernel
def _offsets(shape: np.ndarray) -> np.ndarray:
    """The offsets of the flat weights' tensors, in the order of :data:`TENSORS`."""
    n_in, n_h, n_f, n_d = shape[SH_INPUT], shape[SH_HIDDEN], shape[SH_FEATURES], shape[SH_ACTION]
    sizes = (n_in * n_h, n_h, n_h * n_d, n_d, n_f * n_d, n_d, n_f, n_h, 1)
    out = np.zeros(len(sizes), dtype=np.int64)
    for t in range(1, len(sizes)):
        out[t] = out[t - 1] + sizes[t - 1]
    return out


@kernel
def action_logits(
    w: np.ndarray, shape: np.ndarray, obs: np.ndarray, feats: np.ndarray, n: int, logits: np.ndarray
) -> None:
    """The logits (float64, into ``logits[:n]``) of the first ``n`` feature rows ``feats`` (float32
    (>= n, F)) of a position with observation ``obs`` (float32 (969,)), by the flat net ``w``
    (float32) of ``shape`` (see the module docstring): :func:`score_rows` with units of its own."""
    score_rows(w, shape, obs, feats, n, logits, np.empty(shape[SH_HIDDEN] + 2 * shape[SH_ACTION]))


@kernel
def score_rows(
    w: np.ndarray, shape: np.ndarray, obs: np.ndarray, feats: np.ndarray, n: int, logits: np.ndarray, units: np.ndarray
) -> None:
    """:func:`action_logits` in the scratch ``units`` (float64 (>= H + 2 D,)): the state's ``H``
    hidden units, then its ``D`` terms shared by every action, then one action's ``D`` units."""
    w0, b0, wh, ba, wa, wo, u, _, _ = _offsets(shape)
    n_in, n_h, n_f, n_d = shape[SH_INPUT], shape[SH_HIDDEN], shape[SH_FEATURES], shape[SH_ACTION]
    # the tensors as views of their shapes: row loops of known stride, which vectorise
    obs_rows = w[w0:b0].reshape(n_in, n_h)
    hidden_rows = w[wh:ba].reshape(n_h, n_d)
    feature_rows = w[wa:wo].reshape(n_f, n_d)
    h = units[:n_h]
    state = units[n_h : n_h + n_d]  # Wh' h + ba, shared by every action
    z = units[n_h + n_d : n_h + 2 * n_d]
    h[:] = w[b0 : b0 + n_h]
    for i in range(n_in):  # sparse input: only the nonzero entries' rows
        x = obs[i]
        if x != 0.0:
            row = obs_rows[i]
            for j in range(n_h):
                h[j] += x * row[j]
    for j in range(n_h):
        h[j] = np.tanh(h[j])
    state[:] = w[ba : ba + n_d]
    for i in range(n_h):
        t = h[i]
        row = hidden_rows[i]
        for j in range(n_d):
            state[j] += t * row[j]
    for k in range(n):
        z[:] = state
        total = 0.0
        for f in range(n_f):
            x = feats[k, f]
            if x != 0.0:
                total += x * w[u + f]
                row = feature_rows[f]
                for j in range(n_d):
                    z[j] += x * row[j]
        for j in range(n_d):
            if z[j] > 0.0:
                total += z[j] * w[wo + j]
        logits[k] = total


@kernel
def net_moves(
    nets: NetStack,
    obs: np.ndarray,
    rows: LegalRows,
    which: np.ndarray,
    picks: np.ndarray,
    rngs: np.ndarray,
    out: np.ndarray,
) -> None:
    """Actions of the rows ``which`` (int64) drawn from the softmax of their nets' logits: row ``i``
    is played by net ``picks[i]`` of the :class:`NetStack` ``nets``, from its observation
    ``obs[i]`` and legal rows (the :class:`LegalRows` of :func:`legal_features`, indexed like ``obs``),
    its generator ``rngs[i]`` (uint64 SplitMix64 state, advanced) and into ``out[i]`` (int64)."""
    stack, shape = nets.weights, nets.shape
    acts, feats, offsets = rows.acts, rows.feats, rows.offsets
    logits = np.empty(NUM_ACTIONS)
    rng = np.empty(1, dtype=np.uint64)
    for i in which:
        start, n = offsets[i], offsets[i + 1] - offsets[i]
        action_logits(stack[picks[i]], shape, obs[i], feats[start:], n, logits)
        rng[0] = rngs[i]
        out[i] = acts[start + sample_action(logits[:n], rng)]
        rngs[i] = rng[0]
