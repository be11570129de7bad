"""The learned beliefs of a search (``beliefs="net"``): a belief net's file, loaded for the kernels.

A belief net (:mod:`treppen_env.agent_core.belief_net_kernels`) reads what a seat has seen, the
public history of the deal included, and gives each card it cannot see a probability of lying in
each opponent's hand or in the stock; the search deals its simulations from these probabilities
(:func:`treppen_env.agent_core.belief_kernels.deal_learned`). :mod:`treppen.train.belief_net_torch`
trains one and writes its file: an ``.npz`` of the float32 arrays ``w1, b1, w2, b2, w3, b3`` and the
int64 scalar ``num_players`` it was trained for.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from treppen_env.agent_core.belief_net_kernels import NUM_CARDS, NUM_INPUTS, NUM_REL, BeliefNet
from treppen_env.files import atomic_write

#: The shipped belief net, the default of ``beliefs="net"`` (2 players, ``treppenromme``; its training
#: report, ``belief_net.json``, lies beside it).
DEFAULT_FILE = Path(__file__).parent / "zoo" / "beliefs-2p" / "belief_net.npz"


def load_belief_net(path: str | os.PathLike[str]) -> tuple[BeliefNet, int]:
    """The belief net of a file (see the module docstring) and the players it was trained for.

    :raises FileNotFoundError: when there is no such file.
    :raises ValueError: when the file holds no belief net of this input and output size.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no belief net at {path}: train one with python -m treppen.train.belief_net_torch")
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as err:
        raise ValueError(f"{path} is no belief net: not an .npz file of arrays ({err.__class__.__name__})") from err
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{path} is no belief net: a single array, not an .npz file of arrays")
    with data:
        missing = [name for name in (*BeliefNet._fields, "num_players") if name not in data]
        if missing:
            raise ValueError(f"{path} is no belief net: it lacks {missing}")
        net = BeliefNet(*(np.ascontiguousarray(data[name], dtype=np.float32) for name in BeliefNet._fields))
        players = int(data["num_players"])
    if net.w1.shape[0] != NUM_INPUTS or net.w3.shape[1] != NUM_CARDS * NUM_REL:
        raise ValueError(
            f"{path}: a belief net of {net.w1.shape[0]} inputs and {net.w3.shape[1]} outputs; "
            f"this version reads {NUM_INPUTS} and gives {NUM_CARDS * NUM_REL}"
        )
    return net, players


def save_belief_net(path: str | os.PathLike[str], net: BeliefNet, num_players: int) -> None:
    """Write ``net`` (float32 arrays) for ``num_players`` players as :func:`load_belief_net` reads it."""
    atomic_write(path, lambda tmp: np.savez(tmp, num_players=np.int64(num_players), **net._asdict()), suffix=".npz")
