"""The Ray RLlib backend of ``treppen train`` (needs the ``ray`` extra)."""
