"""Treppenrommé and 500 Rum in OpenSpiel, and bots both ways (docs/guide/openspiel.md).

Importing this package registers the Python game ``"treppenromme"`` with OpenSpiel::

    import pyspiel
    import treppen.openspiel

    game = pyspiel.load_game("treppenromme", {"players": 2, "rules": "rum500"})

- :mod:`treppen.openspiel.game`: the game; its states step our engine
  (:class:`treppen_env.engine.GameState`), the deal is 52 chance nodes.
- :mod:`treppen.openspiel.observer`: tensors from our encoder (:mod:`treppen_env.observation`), one
  observer per ``pyspiel.IIGObservationType``.
- :mod:`treppen.openspiel.bots`: any treppen agent spec as a ``pyspiel.Bot`` (:func:`bot`), and
  OpenSpiel's bots as the treppen agent spec ``openspiel,bot=ismcts,...`` (:class:`OpenSpielAgent`).

Needs OpenSpiel: ``pip install "treppen[openspiel]"``.
"""

from __future__ import annotations

try:
    import pyspiel  # noqa: F401
except ImportError as err:  # an optional extra: say how to get it
    raise ImportError(f'treppen.openspiel needs OpenSpiel ({err}); pip install "treppen[openspiel]"') from None

from treppen.openspiel.bots import BOTS, AgentBot, OpenSpielAgent, bot
from treppen.openspiel.game import GAME_NAME, GAME_TYPE, TreppenGame, TreppenState

__all__ = ["BOTS", "GAME_NAME", "GAME_TYPE", "AgentBot", "OpenSpielAgent", "TreppenGame", "TreppenState", "bot"]
