// Adds configurations to launch.json / .code-workspace text, changing nothing else: the user's
// comments, order, formatting and configurations stay byte-for-byte. No vscode import.
import {
  type Node,
  type ParseError,
  findNodeAtLocation,
  getNodeValue,
  parseTree,
  printParseErrorCode,
} from "jsonc-parser";

export interface DebugConfiguration {
  name: string;
  type: string;
  request: string;
  [key: string]: unknown;
}

/** A configuration of the same file by name, or one of a workspace folder's launch.json. */
export type CompoundMember = string | { name: string; folder: string };

export interface Compound {
  name: string;
  configurations: CompoundMember[];
}

export interface LaunchAdditions {
  configurations: DebugConfiguration[];
  compounds?: Compound[];
}

export type EditOutcome =
  { kind: "changed"; text: string; added: string[] } | { kind: "unchanged" } | { kind: "malformed"; problem: string };

interface Layout {
  unit: string;
  eol: string;
}

/** Indentation and line ends as the file already uses them (4 spaces and \n for a new file). */
export function detectLayout(text: string): Layout {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  // The first indented line shows one level of indentation.
  const first = /\n([ \t]+)\S/.exec(text)?.[1];
  const unit = first ? (first.startsWith("\t") ? "\t" : first) : "    ";
  return { unit, eol };
}

function lineIndent(text: string, offset: number): string {
  const lineStart = text.lastIndexOf("\n", offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart))?.[0] ?? "";
}

function stringifyAt(value: unknown, indent: string, layout: Layout): string {
  return JSON.stringify(value, null, layout.unit)
    .split("\n")
    .join(layout.eol + indent);
}

/** Inserts `item` (already rendered) as the last member of the object or array `container`. */
function appendMember(text: string, container: Node, item: (indent: string) => string, layout: Layout): string {
  const containerIndent = lineIndent(text, container.offset);
  const indent = containerIndent + layout.unit;
  const members = container.children ?? [];
  const last = members[members.length - 1];
  if (last) {
    const end = last.offset + last.length;
    return `${text.slice(0, end)},${layout.eol}${indent}${item(indent)}${text.slice(end)}`;
  }
  const open = container.offset + 1;
  const close = container.offset + container.length - 1;
  const inside = text.slice(open, close);
  // `[]` on one line gets its closing bracket on a line of its own.
  const tail = inside.includes("\n") ? "" : layout.eol + containerIndent;
  return `${text.slice(0, open)}${layout.eol}${indent}${item(indent)}${tail}${text.slice(open)}`;
}

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - before.lastIndexOf("\n");
  return `line ${line}, column ${column}`;
}

function parse(text: string): { tree: Node } | { problem: string } {
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first) {
    return { problem: `${printParseErrorCode(first.error)} at ${lineAndColumn(text, first.offset)}` };
  }
  if (!tree || tree.type !== "object") {
    return { problem: "the top level is not a JSON object" };
  }
  return { tree };
}

function names(list: Node | undefined): Set<string> {
  const result = new Set<string>();
  for (const item of list?.children ?? []) {
    const name = item.type === "object" ? findNodeAtLocation(item, ["name"]) : undefined;
    if (name?.type === "string") {
      result.add(getNodeValue(name) as string);
    }
  }
  return result;
}

/**
 * Adds the configurations and compounds whose names are not there yet. `root` is `[]` for a
 * launch.json and `["launch"]` for a .code-workspace file. Malformed input is reported, not edited.
 */
export function addToLaunch(text: string, additions: LaunchAdditions, root: readonly string[] = []): EditOutcome {
  if (text.trim() === "" && root.length === 0) {
    const fresh: Record<string, unknown> = { version: "0.2.0", configurations: additions.configurations };
    if (additions.compounds?.length) {
      fresh.compounds = additions.compounds;
    }
    return {
      kind: "changed",
      text: `${JSON.stringify(fresh, null, 4)}\n`,
      added: [...additions.configurations, ...(additions.compounds ?? [])].map((item) => item.name),
    };
  }
  const layout = detectLayout(text);
  const parsed = parse(text);
  if ("problem" in parsed) {
    return { kind: "malformed", problem: parsed.problem };
  }
  let current = text;
  let tree = parsed.tree;
  const added: string[] = [];

  const launchNode = root.length ? findNodeAtLocation(tree, [...root]) : tree;
  if (launchNode && launchNode.type !== "object") {
    return { kind: "malformed", problem: `"${root.join(".")}" is not an object` };
  }
  for (const key of ["configurations", "compounds"] as const) {
    const list = launchNode ? findNodeAtLocation(launchNode, [key]) : undefined;
    if (list && list.type !== "array") {
      return { kind: "malformed", problem: `"${[...root, key].join(".")}" is not a list` };
    }
  }

  const groups: [key: "configurations" | "compounds", items: { name: string }[]][] = [
    ["configurations", additions.configurations],
    ["compounds", additions.compounds ?? []],
  ];
  for (const [key, items] of groups) {
    for (const item of items) {
      const container = root.length ? findNodeAtLocation(tree, [...root]) : tree;
      const list = container ? findNodeAtLocation(container, [key]) : undefined;
      if (names(list).has(item.name)) {
        continue;
      }
      if (list) {
        current = appendMember(current, list, (indent) => stringifyAt(item, indent, layout), layout);
      } else if (container) {
        current = appendMember(
          current,
          container,
          (indent) => `${JSON.stringify(key)}: ${stringifyAt([item], indent, layout)}`,
          layout,
        );
      } else {
        // Only a workspace file lacks its `launch` object; it gets one with this item.
        const value = { version: "0.2.0", [key]: [item] };
        current = appendMember(
          current,
          tree,
          (indent) => `${JSON.stringify(root[0])}: ${stringifyAt(value, indent, layout)}`,
          layout,
        );
      }
      added.push(item.name);
      const reparsed = parse(current);
      if ("problem" in reparsed) {
        // Cannot happen for valid input; refusing keeps the user's file safe if it ever does.
        return { kind: "malformed", problem: `an edit went wrong (${reparsed.problem})` };
      }
      tree = reparsed.tree;
    }
  }
  return added.length ? { kind: "changed", text: current, added } : { kind: "unchanged" };
}
