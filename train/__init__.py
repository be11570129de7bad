"""Self-play training (``treppen train``): the YAML config, the Stable-Baselines3 and RLlib backends,
imitation of a teacher, the opponent pool, policy networks, evaluations and Elo during training, and
rebuilding the zoo's agents (docs/ARCHITECTURE.md "Data flow of treppen train")."""
