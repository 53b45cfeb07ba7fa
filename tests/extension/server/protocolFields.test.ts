import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { PROTOCOL_FIELDS } from "../../../extension/server/protocol";

// The compiler holds PROTOCOL_FIELDS to the interfaces of extension/server/protocol.ts; this test holds
// it to docs/protocol.md, where the server's side is described.
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

test("docs/protocol.md and extension/server/protocol.ts list the same types and fields", () => {
  const documented = documentedTypes(readFileSync(DOC, "utf8"));
  assert.deepEqual(Object.keys(documented).sort(), Object.keys(PROTOCOL_FIELDS).sort());
  for (const [name, fields] of Object.entries(PROTOCOL_FIELDS)) {
    assert.deepEqual(documented[name], { ...fields }, `${name} differs between docs/protocol.md and protocol.ts`);
  }
});

test("a field missing from a documented table is caught", () => {
  const markdown = "### `RunError`\n\n| field | type |\n|---|---|\n| `message` | str |\n| `file`? | path |\n\n## Next\n| `x` | y |\n";
  assert.deepEqual(documentedTypes(markdown), { RunError: { message: "required", file: "optional" } });
  assert.notDeepEqual(documentedTypes(markdown).RunError, { ...PROTOCOL_FIELDS.RunError });
});
