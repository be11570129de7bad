"""The compiled simulation core: the state's array layout, the rules table and the Numba kernels.

:mod:`treppen_env.core.layout` lists every slot of a state's arrays, :mod:`treppen_env.core.tables`
builds the rules table, :mod:`treppen_env.core.kernels` holds the rules as kernels and
:mod:`treppen_env.core.view` reads the mover's visible information out of a state for kernels that
decide or simulate (heuristics, playouts). :class:`treppen_env.engine.GameState` is the Python face.
"""
