"""What agents compute, as Numba kernels over the rules core's layout (:mod:`treppen_env.core`):
the greedy heuristic (:mod:`~treppen_env.agent_core.greedy_kernels`), its inputs read from an observation
(:mod:`~treppen_env.agent_core.reader`), its view of every legal action as policy features
(:mod:`~treppen_env.agent_core.feature_kernels`), playouts and redeals
(:mod:`~treppen_env.agent_core.playout_kernels`), the search loops (:mod:`~treppen_env.agent_core.search_kernels`),
beliefs over the unseen cards (:mod:`~treppen_env.agent_core.belief_kernels`), the small net's forward
pass (:mod:`~treppen_env.agent_core.policy_value_kernels`), the action net's legal-action rows and forward pass
(:mod:`~treppen_env.agent_core.action_net_kernels`) and the batched env's step with the seats played inside
the kernel (:mod:`~treppen_env.agent_core.seat_kernels`). The kernels take bundles, typed named tuples
built by keyword and read by name (:class:`~treppen_env.agent_core.greedy_kernels.Inputs`, ...).

This package imports the rules core, never the reverse; its kernels' cache is stamped on its own
sources (:mod:`treppen_env.core.cache`), so an edit here recompiles no rules kernel.
"""
