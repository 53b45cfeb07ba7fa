"""Writes what the editor and the docs take from the option table
(python_backend/quickdev/rundir/option_table.py): package.json's settings and launch
attributes, the TypeScript types (extension/common/optionTable.ts), protocol.md's rows and
the limits table of the docs.

    python tools/option_table.py           write the files that differ (make options)
    python tools/option_table.py --check   exit 1 naming the files that are stale

tests/test_option_table.py runs the check.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python_backend"))

from quickdev.rundir import option_table  # noqa: E402
from quickdev.rundir.option_table import Limit  # noqa: E402

TS_FILE = "extension/common/optionTable.ts"
# The limits table of the docs sits between these lines, wherever it is.
TABLE_START = "<!-- the limits, generated from the option table by tools/option_table.py -->"
TABLE_END = "<!-- end of the generated limits -->"
DOCS = ["README.md", *(f"docs/{p.name}" for p in sorted((REPO / "docs").glob("*.md")))]


def _json_type(limit: Limit) -> str:
    return "integer" if limit.kind == "count" else "number"


def _schema(limit: Limit) -> dict[str, object]:
    """The JSON schema of a value: its type and bound (VS Code checks settings.json and
    launch.json with it)."""
    schema: dict[str, object] = {"type": _json_type(limit)}
    if limit.off:
        schema["minimum"] = 0
    elif limit.kind == "count":
        schema["minimum"] = limit.minimum
    else:
        schema["exclusiveMinimum"] = limit.minimum
    return schema


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def _off(limit: Limit) -> str:
    return f"; `0`: {limit.off_words}" if limit.off else ""


def package_json(text: str) -> str:
    manifest = json.loads(text)
    settings = manifest["contributes"]["configuration"]["properties"]
    (debugger,) = manifest["contributes"]["debuggers"]
    launch = debugger["configurationAttributes"]["launch"]["properties"]
    for limit in option_table.LIMITS:
        if limit.setting:
            over = (
                f"; a launch configuration's `{limit.launch}` overrides it" if limit.launch else ""
            )
            jobs = "every quick-dev job" + ("" if limit.debug_setting else " but a debug job")
            settings[f"quickdev.{limit.setting}"] = {
                **_schema(limit),
                "default": limit.default,
                "scope": "resource",
                "markdownDescription": f"{_sentence(limit.help)} (`{limit.flag}`), for "
                f"{jobs}{_off(limit)}{over}.",
            }
        if limit.launch:
            default = (
                f"the `quickdev.{limit.setting}` setting"
                if limit.setting
                else limit.default_words(markdown=True)
            )
            launch[limit.launch] = {
                **_schema(limit),
                "markdownDescription": f"{_sentence(limit.help)} (`{limit.flag}`; default "
                f"{default}{_off(limit)}).",
            }
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def typescript() -> str:
    arguments = [limit for limit in option_table.LIMITS if limit.launch]
    settings = [limit for limit in option_table.LIMITS if limit.setting]
    lines = [
        "// Generated from python_backend/quickdev/rundir/option_table.py by tools/option_table.py"
        " (make options):",
        "// do not edit; tests/test_option_table.py fails when it is stale.",
        "",
        "/** The limits a launch configuration, and so quickdev.startJob, may give a job. */",
        "export interface LimitArguments {",
    ]
    for limit in arguments:
        lines.append(f"  /** {_sentence(limit.help)} (`{limit.flag}`). */")
        lines.append(f"  {limit.launch}?: number;")
    lines += ["}", "", "export const LIMIT_ARGUMENTS = {"]
    lines += [f'  {limit.launch}: "optional",' for limit in arguments]
    lines += ["} as const;", "", "/** The limits the `quickdev.*` settings give every job. */"]
    lines += ["export interface LimitSettings {"]
    for limit in settings:
        lines.append(f"  /** {_sentence(limit.help)} (`{limit.flag}`). */")
        lines.append(f"  {limit.setting}: number;")
    lines += ["}", "", "/** Each setting's type, as package.json declares it. */"]
    lines += ["export const LIMIT_SETTINGS = {"]
    lines += [f'  {limit.setting}: "{_json_type(limit)}",' for limit in settings]
    lines += ["} as const;", ""]
    return "\n".join(lines)


def _protocol_type(limit: Limit) -> str:
    kind = "int" if limit.kind == "count" else "float"
    sign = "≥" if limit.kind == "count" or limit.bound_words else ">"
    return f"{kind} {sign} {limit.minimum:g}" + (f" (0: {limit.off_words})" if limit.off else "")


def protocol_md(text: str) -> str:
    """The rows of the ``Settings`` and ``StartJobArgs`` tables that are limits, rewritten in
    place (a new one goes at the table's end)."""
    settings = {
        limit.setting: f"| `{limit.setting}` | {_protocol_type(limit)} | {limit.help} "
        f"(`{limit.flag}`; default {limit.default_words(markdown=True)}) |"
        for limit in option_table.LIMITS
        if limit.setting
    }
    arguments = {}
    for limit in option_table.LIMITS:
        if limit.launch:
            default = (
                f"the `{limit.setting}` setting"
                if limit.setting
                else f"the job's default ({limit.default_words(markdown=True)})"
            )
            arguments[limit.launch] = (
                f"| `{limit.launch}`? | {_protocol_type(limit)} | {limit.help} "
                f"(`{limit.flag}`); omitted: {default} |"
            )
    text = _table_rows(text, "Settings", settings)
    return _table_rows(text, "StartJobArgs", arguments)


def _table_rows(text: str, heading: str, rows: dict[str, str]) -> str:
    lines = text.split("\n")
    start = lines.index(f"### `{heading}`")
    first = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    missing = dict(rows)
    for i in range(first, end):
        if (row := re.match(r"\|\s*`(\w+)`", lines[i])) and row[1] in missing:
            lines[i] = missing.pop(row[1])
    lines[end:end] = list(missing.values())
    return "\n".join(lines)


def limits_table() -> str:
    rows = ["| option | default | bounds |", "|---|---|---|"]
    for limit in option_table.LIMITS:
        value = limit.metavar or "N"
        default = limit.default_words(markdown=True)
        rows.append(f"| `{limit.flag} {value}` | {default} | {limit.doc}{_off(limit)} |")
    return "\n".join([TABLE_START, *rows, TABLE_END])


def docs_table(text: str) -> str:
    pattern = re.compile(re.escape(TABLE_START) + ".*?" + re.escape(TABLE_END), re.S)
    return pattern.sub(lambda _: limits_table(), text)


def _generated() -> dict[str, list[Callable[[str], str]]]:
    """Each file and what rewrites it, in order."""
    files: dict[str, list[Callable[[str], str]]] = {
        "package.json": [package_json],
        TS_FILE: [lambda _: typescript()],
        "docs/protocol.md": [protocol_md],
    }
    for name in DOCS:
        files.setdefault(name, []).append(docs_table)
    return files


def stale() -> dict[str, str]:
    """Each generated file that differs from what the table makes of it: path -> new text."""
    changed = {}
    for name, steps in _generated().items():
        path = REPO / name
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        new = current
        for step in steps:
            new = step(new)
        if new != current:
            changed[name] = new
    return changed


def main(argv: list[str]) -> int:
    changed = stale()
    if "--check" in argv:
        for name in changed:
            print(f"{name} is stale: run `make options`", file=sys.stderr)
        return 1 if changed else 0
    for name, text in changed.items():
        (REPO / name).write_text(text, encoding="utf-8")
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
