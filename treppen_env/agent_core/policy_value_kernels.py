"""A small policy/value network's forward pass as kernels, for playouts and leaf values.

The network (:class:`treppen.train.expert.policy_value_torch.KernelNet` trains it in torch and exports it) reads
an observation vector (float32 (969,), :mod:`treppen_env.observation`), mostly zeros, so its first
layer sums the weight rows of the nonzero entries only. Its layers, all ``tanh`` but the heads:

- ``hidden``: the observation to ``H`` units, then ``depth - 1`` layers of ``H`` to ``H``;
- ``policy``: ``H`` to 898 logits, computed for the legal actions only;
- ``value``: ``H`` plus the other seats' hands (3 x 52 bits: a determinized world is fully known)
  to one number, ``tanh``: the seat's expected score against the others (-1 lost to all, +1 beat
  all; the win objective of :mod:`treppen_env.agent_core.search_kernels` as ``2 * score - 1``).

The weights are one float32 array ``w`` with the layout of :func:`layout`, so a kernel takes the
net as ``(w, shape)``, ``shape`` int64 (:data:`SHAPE_SIZE`,): observation size, ``H``, depth.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from treppen_env.core import kernels
from treppen_env.core.bits import bit, lowest
from treppen_env.core.cache import kernel
from treppen_env.core.generator import random_unit
from treppen_env.core.layout import HAND, MAX_SEATS, NUM_CARDS

#: Slots of the shape array.
SH_INPUT, SH_HIDDEN, SH_DEPTH = range(3)
SHAPE_SIZE = 3
NUM_ACTIONS = kernels.A_DISCARD_BASE + NUM_CARDS
#: Inputs of the value head besides the hidden units: the other seats' hands.
VALUE_EXTRA = (MAX_SEATS - 1) * NUM_CARDS


def layout(obs_size: int, hidden: int, depth: int) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Where each tensor lies in the flat weights: name -> (offset, shape); ``w{k}``/``b{k}`` the
    hidden layers (``w0`` (obs_size, H), then (H, H)), ``pw``/``pb`` the policy head (898, H) and
    (898,), ``vw``/``vb`` the value head (H + VALUE_EXTRA,) and (1,)."""
    shapes = []
    for k in range(depth):
        shapes += [(f"w{k}", (obs_size if k == 0 else hidden, hidden)), (f"b{k}", (hidden,))]
    shapes += [("pw", (NUM_ACTIONS, hidden)), ("pb", (NUM_ACTIONS,))]
    shapes += [("vw", (hidden + VALUE_EXTRA,)), ("vb", (1,))]
    out, start = {}, 0
    for name, shape in shapes:
        out[name] = (start, shape)
        start += int(np.prod(shape))
    out["size"] = (start, ())
    return out


@kernel
def hidden_units(w: np.ndarray, shape: np.ndarray, obs: np.ndarray, h: np.ndarray, scratch: np.ndarray) -> None:
    """The hidden units (float32 (H,)) of an observation into ``h``; ``scratch`` float32 (H,)."""
    n_in, n_h, depth = shape[SH_INPUT], shape[SH_HIDDEN], shape[SH_DEPTH]
    bias = n_in * n_h
    for j in range(n_h):
        h[j] = w[bias + j]
    for i in range(n_in):  # sparse input: only the nonzero entries' rows
        x = obs[i]
        if x != 0.0:
            row = i * n_h
            for j in range(n_h):
                h[j] += x * w[row + j]
    for j in range(n_h):
        h[j] = np.tanh(h[j])
    start = bias + n_h
    for _ in range(1, depth):
        for j in range(n_h):
            scratch[j] = w[start + n_h * n_h + j]
        for i in range(n_h):
            x = h[i]
            row = start + i * n_h
            for j in range(n_h):
                scratch[j] += x * w[row + j]
        for j in range(n_h):
            h[j] = np.tanh(scratch[j])
        start += n_h * n_h + n_h


@kernel
def _heads(shape: np.ndarray) -> int:
    """Offset of the policy head's weights."""
    n_in, n_h, depth = shape[SH_INPUT], shape[SH_HIDDEN], shape[SH_DEPTH]
    return n_in * n_h + n_h + (depth - 1) * (n_h * n_h + n_h)


@kernel
def policy_logits(w: np.ndarray, shape: np.ndarray, h: np.ndarray, mask: np.ndarray, logits: np.ndarray) -> None:
    """The policy's logits (float64 (898,)) of the legal actions of ``mask`` (int8), from the hidden
    units; -inf for the others."""
    n_h = shape[SH_HIDDEN]
    pw = _heads(shape)
    pb = pw + NUM_ACTIONS * n_h
    for a in range(NUM_ACTIONS):
        if mask[a] == 0:
            logits[a] = -np.inf
            continue
        total = w[pb + a]
        row = pw + a * n_h
        for j in range(n_h):
            total += h[j] * w[row + j]
        logits[a] = total


@kernel
def value(w: np.ndarray, shape: np.ndarray, h: np.ndarray, u64: np.ndarray, seat: int, n: int) -> float:
    """The value head: ``seat``'s expected score against the others in [-1, 1] (see the module
    docstring), from the hidden units and the other seats' hands in ``u64`` (``n`` players; seats
    relative to ``seat``, padded to 3)."""
    n_h = shape[SH_HIDDEN]
    vw = _heads(shape) + NUM_ACTIONS * n_h + NUM_ACTIONS
    total = w[vw + n_h + VALUE_EXTRA]
    for j in range(n_h):
        total += h[j] * w[vw + j]
    return np.tanh(total + _hand_terms(w, vw + n_h, u64, seat, n))


@kernel
def _hand_terms(w: np.ndarray, start: int, u64: np.ndarray, seat: int, n: int) -> float:
    """The value head's terms of the other seats' hands (bits, relative seats 1..n-1)."""
    total = 0.0
    for k in range(1, n):
        hand = u64[HAND + (seat + k) % n]
        while hand:
            c = lowest(hand)
            hand &= ~bit(c)
            total += w[start + (k - 1) * NUM_CARDS + c]
    return total


@kernel
def sample_action(logits: np.ndarray, rng: np.ndarray) -> int:
    """An action drawn from the softmax of ``logits`` (float64 (898,), -inf for illegal ones)."""
    best = -np.inf
    for a in range(logits.size):
        best = max(best, logits[a])
    total = 0.0
    for a in range(logits.size):
        if logits[a] > -np.inf:
            total += np.exp(logits[a] - best)
    pick = random_unit(rng) * total
    last = -1
    for a in range(logits.size):
        if logits[a] > -np.inf:
            last = a
            pick -= np.exp(logits[a] - best)
            if pick < 0.0:
                return a
    return last


def load(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """The flat weights (float32) and shape (int64) in a ``.npz`` of ``w`` and ``shape``
    (:meth:`treppen.train.expert.policy_value_torch.KernelNet.save` writes them).

    :raises FileNotFoundError: when there is no such file.
    :raises ValueError: when the weights do not fit the shape.
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"no kernel network at {str(path)!r} (a KernelNet.save file, .npz)")
    with np.load(path) as data:
        w, shape = data["w"].astype(np.float32), data["shape"].astype(np.int64)
    expected = layout(int(shape[SH_INPUT]), int(shape[SH_HIDDEN]), int(shape[SH_DEPTH]))["size"][0]
    if shape.shape != (SHAPE_SIZE,) or w.size != expected:
        raise ValueError(f"{str(path)!r}: {w.size} weights for the shape {shape.tolist()}, which needs {expected}")
    return w, shape
