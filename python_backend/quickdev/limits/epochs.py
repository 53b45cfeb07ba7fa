"""One epoch: a script's own ``--epochs``-style option becomes 1 in a quick-dev job.

The batch limit makes each pass short, but a loop over ``range(args.epochs)`` would
still make every pass it was told to. An epochs option the user left at its default
is set to 1 when the script parses its arguments; a value given on the command line
is kept, since the user asked for it, and the train_passes budget (limits/budget.py) lets
that many passes run. A framework's trainer gets one epoch through its own settings
(``quickdev.frameworks``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from quickdev.analysis.knobs import KNOB_NAMES
from quickdev.limits.patching import Patcher

log = logging.getLogger(__name__)

EPOCH_OPTIONS = frozenset(name for name, kind in KNOB_NAMES.items() if kind == "epochs")


def install(patcher: Patcher, overridden: list[str], given_epochs: Callable[[int], None]) -> None:
    """Patch argparse; each option set to 1 is appended to ``overridden`` (e.g. "--epochs");
    a value the user gave is passed to ``given_epochs`` (the train_passes budget allows it)."""
    original = argparse.ArgumentParser.parse_known_args

    def parse_known_args(
        self: argparse.ArgumentParser,
        args: Sequence[str] | None = None,
        namespace: argparse.Namespace | None = None,
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = original(self, args, namespace)
        given = [arg.split("=", 1)[0] for arg in (sys.argv[1:] if args is None else args)]
        for action in self._actions:
            flag = _epochs_flag(action)
            if flag is None:
                continue
            value = getattr(parsed, action.dest, None)
            if not isinstance(value, int) or isinstance(value, bool):
                continue
            if _was_given(action, given):
                given_epochs(value)
            elif value > 1:
                setattr(parsed, action.dest, 1)
                if flag not in overridden:
                    overridden.append(flag)
                    log.info("%s %d -> 1 (one epoch in a quick-dev job)", flag, value)
        return parsed, extras

    patcher.set(argparse.ArgumentParser, "parse_known_args", parse_known_args)


def _epochs_flag(action: argparse.Action) -> str | None:
    for flag in action.option_strings:
        if flag.startswith("--") and flag[2:].replace("-", "_").lower() in EPOCH_OPTIONS:
            return flag
    return None


def _was_given(action: argparse.Action, given: list[str]) -> bool:
    # argparse also accepts a unique prefix ("--epo 3") for a long option.
    return any(
        arg in action.option_strings
        or (arg.startswith("--") and any(f.startswith(arg) for f in action.option_strings))
        for arg in given
        if arg != "--"
    )
