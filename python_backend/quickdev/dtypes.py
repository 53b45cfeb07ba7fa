"""The 16-bit floating dtypes, for code of the job (imports torch; the server never
imports this)."""

from __future__ import annotations

import torch

# What autocast computes in and what its callers ask for; bfloat16 first, the order the
# CPU's autocast speeds are measured and reported in (limits/device/autocast.py).
HALF = (torch.bfloat16, torch.float16)
