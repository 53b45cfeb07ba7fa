"""Values the step reads from its tensors, kept from the real step for the replay.

Fake tensors have shapes but no values, so code that reads one (``bool(mask.all())`` in
``nn.TransformerEncoder``'s causal-mask check, ``if torch.isnan(loss)``, ``int(n.max())``)
cannot run on them. The job records what each read returned in the real step, in order;
the replay answers the same reads with the same values.
"""

from __future__ import annotations

from typing import Any

from torch.overrides import TorchFunctionMode

# Tensor methods that turn a value into Python: bool(t), int(t), t.item(), f"{t:.3f}", ...
READS = frozenset({"item", "__bool__", "__int__", "__float__", "__index__", "__format__"})
# Reads a recording keeps (a loop of them would be data, not control flow).
MAX_READS = 1000

Read = tuple[str, Any]


def read_name(func: Any) -> str | None:
    name = getattr(func, "__name__", "")
    return name if name in READS else None


class ReadsUnknown(RuntimeError):
    """The replay read a value the real step did not read; the message is one line."""


class RecordedReads(TorchFunctionMode):
    """Answers each read of the replay with the next one of that kind the real step made."""

    def __init__(self, reads: list[Read]) -> None:
        super().__init__()
        self.reads = reads
        self.at = 0

    def restart(self) -> None:
        """A new micro-step reads the same values again."""
        self.at = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = read_name(func)
        if name is None:
            return func(*args, **(kwargs or {}))
        for index in range(self.at, len(self.reads)):
            if self.reads[index][0] == name:
                self.at = index + 1
                return self.reads[index][1]
        raise ReadsUnknown(f"the step read a tensor's value ({name}) that the real step did not")
