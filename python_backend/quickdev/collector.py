"""What a process's imports leave alive is moved out of the garbage collector's sight.

A full collection walks every tracked object: with torch and torch._dynamo loaded,
0.2 to 0.4 s each time on a small machine, and the imports that follow (a library's
hundreds of modules), a library's own ``gc.collect()`` (accelerate calls it in
training) and the interpreter's shutdown run several. Frozen objects are skipped. The
objects made after the freeze (the user's model, data, optimizer) are collected, and
finalized at the end, as in a plain ``python`` run; the imports' own garbage is
collected first, so nothing unreachable is kept. Only ``gc.get_objects()`` tells the
difference: it lists no frozen object.
"""

from __future__ import annotations

import gc


def freeze_imports() -> None:
    """Call once the long-lived imports are done, before the work that makes short-lived
    objects (a job's user code, a server's requests)."""
    gc.collect()
    gc.freeze()
