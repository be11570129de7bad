"""treppen: Treppenrommé (staircase rummy) and 500 Rum for reinforcement learning.

The environment is the package :mod:`treppen_env`; this package holds the rest under names of its
own: :mod:`treppen.agents` (agents and the model zoo), :mod:`treppen.arena` (the deal loop,
tournaments, ratings), :mod:`treppen.train` (self-play training), :mod:`treppen.apps` (the
``treppen`` command line and the web page) and :mod:`treppen.configs` (the shipped training
configs). In the repository they are the folders ``agents/``, ``arena/``, ``train/``, ``apps/`` and
``configs/`` at its root, installed under these names by ``package-dir`` in ``pyproject.toml``
(docs/ARCHITECTURE.md "Layout").
"""

__version__ = "0.2.0"
