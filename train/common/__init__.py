"""The base every training backend stands on, without Stable-Baselines3 or another backend: configs,
run folders and checkpoints, evaluations and Elo ratings, keep-best gating, the imitation warm start,
the pool's agents and the action-feature net (docs/ARCHITECTURE.md "Layout")."""
