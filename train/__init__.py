"""Self-play training (``treppen train``): the YAML config, one package per backend (``sb3``,
``kernel``, ``expert``, ``rllib``) over a shared base (the run folder, checkpoints, the periodic
evaluation and Elo, keep-best's gate, the deal loop of rows with seats), and rebuilding the zoo's
agents (docs/ARCHITECTURE.md "Data flow of treppen train")."""
