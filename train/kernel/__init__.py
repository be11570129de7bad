"""The batched learner of ``treppen train`` (``backend: kernel``): PPO over the rows of the batched
env, every opponent played inside the kernels."""
