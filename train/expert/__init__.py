"""Expert iteration (``backend: expert``): a search labels positions, a small net inside the kernels
learns from them, and the next generation searches with that net."""
