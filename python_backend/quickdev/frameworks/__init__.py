"""Every training framework Quickdev knows, one module each (``base.Framework``).

Adding a framework is its module and one line in ``FRAMEWORKS``; what the rest of
Quickdev asks of frameworks (the lenses' facts, the warm start's heavy imports, a debug
job's early imports, cached CUDA checks, the limits) is derived here from that list.
Torch-free: the language server imports it.
"""

from __future__ import annotations

from quickdev.frameworks.accelerate import Accelerate
from quickdev.frameworks.base import Framework, LensFacts, Limits
from quickdev.frameworks.fabric import Fabric
from quickdev.frameworks.huggingface import HuggingFace
from quickdev.frameworks.ignite import Ignite
from quickdev.frameworks.lightning import Lightning
from quickdev.frameworks.skorch import Skorch

__all__ = [
    "FRAMEWORKS",
    "Framework",
    "LensFacts",
    "Limits",
    "heavy_packages",
    "lens_facts",
    "scan_label_of",
]

FRAMEWORKS: tuple[Framework, ...] = (
    Lightning(),
    Fabric(),
    HuggingFace(),
    Accelerate(),
    Ignite(),
    Skorch(),
)


def heavy_packages() -> frozenset[str]:
    """Top-level imports worth a warm process: torch, and every framework's."""
    return frozenset({"torch", *(p for f in FRAMEWORKS for p in f.packages)})


def lens_facts() -> LensFacts:
    """Every framework's lens facts in one: the analysis looks for any of them (the scan
    label is each framework's own, ``scan_label_of``)."""

    def union(field: str) -> frozenset[str]:
        found: set[str] = set()
        for framework in FRAMEWORKS:
            found |= getattr(framework.lens, field)
        return frozenset(found)

    return LensFacts(
        trainer_classes=union("trainer_classes"),
        entry_methods=union("entry_methods"),
        entry_constructors=union("entry_constructors"),
        module_bases=union("module_bases"),
        step_methods=union("step_methods"),
        script_packages=union("script_packages"),
    )


def scan_label_of(call: str) -> str | None:
    """The scan label of a script whose job is run by ``call``: a trainer's method
    (Lightning's ``fit`` labels it ``lightning``; Hugging Face's ``train``, none) or an
    entry constructor (``LightningCLI``)."""
    for framework in FRAMEWORKS:
        lens = framework.lens
        runs_job = call in lens.entry_methods or call in lens.entry_constructors
        if runs_job and lens.scan_label:
            return lens.scan_label
    return None
