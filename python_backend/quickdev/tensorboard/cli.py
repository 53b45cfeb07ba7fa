"""``quickdev tensorboard``. Placeholder until the TensorBoard manager lands."""

from pathlib import Path


def main(logdir: Path, stop: bool = False) -> int:
    raise NotImplementedError("the TensorBoard manager is not written yet")
