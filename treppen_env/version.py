"""The environment's version (:data:`ENV_VERSION`), importable without the env itself."""

#: The environment's name and version, as PettingZoo names its envs (``tictactoe_v3``): bumped
#: whenever observations, masks or rewards change. Game records, run folders and model cards store
#: it; a model card of another version warns when it loads (``treppen.agents.zoo``).
ENV_VERSION = "treppen_v0"
