"""Puts tests/ on sys.path for the helpers the debugger tests share (dap.py, debug_support.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
