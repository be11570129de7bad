"""The rules core: the state's array layout, the rules table and the rules as Numba kernels.

:mod:`treppen_env.core.layout` lists every slot of a state's arrays, :mod:`treppen_env.core.tables`
builds the rules table, :mod:`treppen_env.core.kernels` holds the rules as kernels,
:mod:`treppen_env.core.bits` the card-set bit helpers, :mod:`treppen_env.core.observe` the
observation writer, :mod:`treppen_env.core.generator` the kernels' random generator and
:mod:`treppen_env.core.vector_kernels` the batched env's rewards and checks. What agents compute (the
heuristic, playouts, search, beliefs, the net) is :mod:`treppen_env.agent_core`, which imports this
package, never the reverse. :class:`treppen_env.engine.GameState` is the Python face.
"""
