import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { COMMANDS, PROTOCOL_FIELDS } from "../../../extension/server/protocol";

// The compiler holds PROTOCOL_FIELDS to the interfaces of extension/server/protocol.ts and
// QuickdevServer.command to COMMANDS; this test holds both to docs/protocol.md, where the server's
// side is described (tests/server/test_protocol_fields.py holds the server to the same document).
const DOC = path.join(__dirname, "..", "..", "..", "..", "docs", "protocol.md");

type Table = Record<string, "required" | "optional">;

/** Each "### `Name`" section's field table: `name` or `name`? in the first column. */
function documentedTypes(markdown: string): Record<string, Table> {
  const types: Record<string, Table> = {};
  let current: Table | undefined;
  for (const line of markdown.split("\n")) {
    const heading = /^###\s+`(\w+)`\s*$/.exec(line);
    if (heading) {
      current = types[heading[1]] = {};
      continue;
    }
    if (/^#/.test(line)) {
      current = undefined;
    }
    const row = /^\|\s*`(\w+)`(\?)?\s*\|/.exec(line);
    if (current && row) {
      current[row[1]] = row[2] ? "optional" : "required";
    }
  }
  return types;
}

/** The command table: each `quickdev.*` row's argument and answer, the first word in backticks. */
function documentedCommands(markdown: string): Record<string, { argument: string; answer: string }> {
  const commands: Record<string, { argument: string; answer: string }> = {};
  for (const line of markdown.split("\n")) {
    const row = /^\|\s*`(quickdev\.\w+)`\s*\|\s*`([^`]+)`[^|]*\|\s*`([^`]+)`/.exec(line);
    if (row) {
      assert.ok(!(row[1] in commands), `${row[1]} is listed twice in docs/protocol.md`);
      commands[row[1]] = { argument: row[2], answer: row[3] };
    }
  }
  return commands;
}

const MARKDOWN = readFileSync(DOC, "utf8");

test("docs/protocol.md and extension/server/protocol.ts list the same types and fields", () => {
  const documented = documentedTypes(MARKDOWN);
  assert.deepEqual(Object.keys(documented).sort(), Object.keys(PROTOCOL_FIELDS).sort());
  for (const [name, fields] of Object.entries(PROTOCOL_FIELDS)) {
    assert.deepEqual(documented[name], { ...fields }, `${name} differs between docs/protocol.md and protocol.ts`);
  }
});

test("docs/protocol.md's command table and the extension's COMMANDS name the same commands and types", () => {
  assert.deepEqual(documentedCommands(MARKDOWN), COMMANDS);
});

test("a field missing from a documented table is caught", () => {
  const markdown =
    "### `RunError`\n\n| field | type |\n|---|---|\n| `message` | str |\n| `file`? | path |\n\n## Next\n| `x` | y |\n";
  assert.deepEqual(documentedTypes(markdown), { RunError: { message: "required", file: "optional" } });
  assert.notDeepEqual(documentedTypes(markdown).RunError, { ...PROTOCOL_FIELDS.RunError });
});

test("a command row is read as its argument and answer type, and a command listed twice is caught", () => {
  const row = '| `quickdev.getRun` | `RunRef` | `RunDetail`; refused when … `{"error"}` |';
  assert.deepEqual(documentedCommands(row), { "quickdev.getRun": { argument: "RunRef", answer: "RunDetail" } });
  assert.throws(() => documentedCommands(`${row}\n${row}`), /listed twice/);
});
