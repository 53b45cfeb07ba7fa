"""Static analysis of Python training code: entry points, steps, argparse knobs.

Pure ``ast``; never imports or runs the code it reads.
"""

from __future__ import annotations

from pathlib import Path

from quickdev.analysis.findings import Analysis, EntryPoint, Knob, Step
from quickdev.analysis.incremental import IncrementalAnalyzer
from quickdev.analysis.source import decode_source

__all__ = [
    "Analysis",
    "EntryPoint",
    "IncrementalAnalyzer",
    "Knob",
    "Step",
    "analyze_file",
    "analyze_text",
]


def analyze_text(text: str) -> Analysis:
    return IncrementalAnalyzer().update(text)


def analyze_file(path: Path) -> Analysis | None:
    """None when the file cannot be read or decoded; an unparsable file gives ``parsed=False``."""
    try:
        text = decode_source(path.read_bytes())
    except OSError:
        return None
    return None if text is None else analyze_text(text)
