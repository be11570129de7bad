"""TensorBoard scalars for the backends that have no logger of their own (the batched learner and
RLlib): SB3's logger's ``record``/``dump`` interface on torch's ``SummaryWriter``."""

from __future__ import annotations

from pathlib import Path


class Logger:
    """TensorBoard scalars gathered by ``record`` and written by ``dump`` (the interface the
    evaluation and Elo callbacks of :mod:`treppen.train.common.periodic_ratings` log through)."""

    def __init__(self, folder: Path | None):
        self.values: dict[str, float] = {}
        self.writer = None
        if folder is not None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(folder))

    def record(self, key: str, value: float) -> None:
        self.values[key] = float(value)

    def dump(self, steps: int) -> None:
        if self.writer is not None:
            for key, value in self.values.items():
                self.writer.add_scalar(key, value, steps)
            self.writer.flush()
        self.values.clear()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
