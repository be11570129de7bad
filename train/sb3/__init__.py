"""The Stable-Baselines3 backend of ``treppen train`` (``backend: sb3``): sb3-contrib's MaskablePPO
with the recipe's policy, imitation warm start, opponent pool and keep-best. The RLlib backend runs
the same recipe and takes its policy net, imitation and pool agents from here."""
