"""Whether this machine has CUDA, for tests whose promise depends on it.

Without CUDA a job stands the CPU in for it (the device engine, CPU autocast in CUDA's place,
the forecast's default sizes, the step-cost check of this CPU). A test of the stand-in proves
nothing on a GPU machine, where CUDA itself runs: it is skipped there, saying so, so that the
suite on a GPU reports only real failures. A test of CUDA itself is skipped without it."""

from __future__ import annotations

import pytest
import torch

CUDA = torch.cuda.is_available()
cpu_stand_in = pytest.mark.skipif(
    CUDA, reason="proves the CPU stand-in for CUDA; this machine has CUDA, which runs instead"
)
needs_gpu = pytest.mark.skipif(not CUDA, reason="needs a CUDA device (GPU-machine check)")
