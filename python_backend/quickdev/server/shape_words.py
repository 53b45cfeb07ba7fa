"""How a recorded name reads in the editor: the inlay hint's label and the hover's markdown,
both built on ``rundir.shapes`` (the formatter the debugger's Variables view uses too)."""

from __future__ import annotations

from quickdev.rundir.shapes import (
    EVAL,
    SETUP,
    TRAIN,
    NameRecord,
    Seen,
    TensorFacts,
    shape_text,
    tensor_text,
)
from quickdev.server.shape_records import RunOfRecord

PHASE_WORDS = {
    SETUP: "before the model's first forward",
    TRAIN: "training",
    EVAL: "evaluation",
}
# A hint stays one glance long: the first few distinct shapes, each cut to a glance (a
# structure such as an optimizer's param group would fill the line), then how many more.
# The hover has them whole.
LABEL_SHAPES = 3
LABEL_SHAPE_CHARS = 60


def hint_label(name: NameRecord) -> str:
    """``q: f32[64, 6, 256, 64]``; a line that saw several shapes: ``x: f32[8, 16] | f32[8, 4]``."""
    texts = list(dict.fromkeys(_cut(shape_text(seen.value)) for seen in name.seen))
    shown = " | ".join(texts[:LABEL_SHAPES])
    hidden = len(texts) - LABEL_SHAPES
    if hidden > 0:
        shown += f" | +{hidden} more"
    elif name.more:
        shown += " | …"
    return f"{name.name}: {shown}"


def _cut(text: str) -> str:
    return text if len(text) <= LABEL_SHAPE_CHARS else text[: LABEL_SHAPE_CHARS - 1] + "…"


def hover_markdown(name: NameRecord, run: RunOfRecord) -> str:
    parts = [_seen_markdown(name.name, seen) for seen in name.seen]
    if name.more:
        parts.append(f"and at least {name.more} more distinct value(s), not kept")
    times = "once" if name.times == 1 else f"{name.times} times"
    started = run.started.replace("T", " ")[:16]
    parts.append(
        f"Looked at {times} in the first passes of quick-dev run `{run.run_id}` "
        f"(started {started} UTC)"
    )
    return "\n\n---\n\n".join(parts[:-1]) + "\n\n" + parts[-1]


def _seen_markdown(name: str, seen: Seen) -> str:
    value = seen.value
    text = tensor_text(value) if isinstance(value, TensorFacts) else shape_text(value)
    phases = ", ".join(PHASE_WORDS.get(p, p) for p in seen.phases)
    lines = [f"`{name}: {text}` — {phases}"]
    if isinstance(value, TensorFacts):
        stats = _stats(value)
        if stats:
            lines.append(stats)
    return "  \n".join(lines)


def _stats(facts: TensorFacts) -> str:
    parts = []
    if facts.min is not None and facts.max is not None and facts.mean is not None:
        parts += [f"min {facts.min:.4g}", f"max {facts.max:.4g}", f"mean {facts.mean:.4g}"]
    for label, count in (("NaN", facts.nan), ("Inf", facts.inf)):
        if count is not None:
            parts.append(f"**{label} {count}**" if count else f"{label} 0")
    if not parts and facts.layout == "strided":
        return "values not read (too large, or not readable here)"
    return " · ".join(parts)
