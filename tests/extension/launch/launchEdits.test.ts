import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { type ParseError, parse } from "jsonc-parser";
import {
  ATTACH_TO_RUNNING_JOB,
  COMPOUND,
  CURRENT_FILE,
  folderAdditions,
  launchCwd,
  relativeScript,
  workspaceAdditions,
} from "../../../extension/launch/launchConfigs";
import { type EditOutcome, addToLaunch } from "../../../extension/launch/launchEdits";

// Compiled to out/tests/extension/launch; the samples stay in the source tree.
const FIXTURES = path.join(__dirname, "..", "..", "..", "..", "tests", "extension", "launch", "fixtures");

function sample(name: string): string {
  return readFileSync(path.join(FIXTURES, name), "utf8");
}

function changed(outcome: EditOutcome): { text: string; added: string[] } {
  assert.equal(outcome.kind, "changed", JSON.stringify(outcome));
  return outcome;
}

function parseStrictly(text: string): Record<string, unknown> {
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true }) as Record<string, unknown>;
  assert.deepEqual(errors, [], "the edited file must stay valid JSONC");
  return value;
}

/** The original bytes must survive: the edit only inserts text, at one or two places. */
function assertOnlyInserted(original: string, edited: string): void {
  let prefix = 0;
  while (prefix < original.length && original[prefix] === edited[prefix]) {
    prefix += 1;
  }
  let suffix = 0;
  while (
    suffix < original.length - prefix &&
    original[original.length - 1 - suffix] === edited[edited.length - 1 - suffix]
  ) {
    suffix += 1;
  }
  const keptMiddle = original.slice(prefix, original.length - suffix);
  const editedMiddle = edited.slice(prefix, edited.length - suffix);
  assert.ok(
    editedMiddle.includes(keptMiddle),
    `original text was changed, not only extended:\n${keptMiddle}\n---\n${editedMiddle}`,
  );
}

const ADDITIONS = folderAdditions(["train.py", "tools/finetune.py"], { debugpy: true });
test("without the Python Debugger no debugpy configuration is generated", () => {
  const names = folderAdditions(["train.py"], { debugpy: false }).configurations.map((c) => c.type);
  assert.deepEqual([...new Set(names)], ["quickdev"]);
  assert.ok(folderAdditions(["train.py"], { debugpy: true }).configurations.some((c) => c.type === "debugpy"));
});

const NEW_NAMES = [
  CURRENT_FILE,
  ATTACH_TO_RUNNING_JOB,
  "Quickdev: debug train.py",
  "Quickdev: profile train.py",
  "Quickdev: debug tools/finetune.py",
  "Quickdev: profile tools/finetune.py",
];

for (const name of [
  "generated-by-vscode.jsonc",
  "hand-written-trailing-commas.jsonc",
  "tabs-crlf.json",
  "empty-configurations.json",
  "no-configurations.jsonc",
]) {
  test(`${name}: adds the configurations and keeps every original byte`, () => {
    const original = sample(name);
    const { text, added } = changed(addToLaunch(original, ADDITIONS));
    assert.deepEqual(added, NEW_NAMES);
    assertOnlyInserted(original, text);
    const configurations = parseStrictly(text).configurations as Record<string, unknown>[];
    const names = configurations.map((configuration) => configuration.name);
    for (const added of NEW_NAMES) {
      assert.ok(names.includes(added), `${added} missing`);
    }
    for (const configuration of configurations.filter((c) => NEW_NAMES.includes(c.name as string))) {
      assert.equal(configuration.justMyCode, false);
    }
    // The user's configurations come first, in their order.
    const originalNames = ((parse(original) as { configurations?: { name: string }[] }).configurations ?? []).map(
      (configuration) => configuration.name,
    );
    assert.deepEqual(names.slice(0, originalNames.length), originalNames);
  });

  test(`${name}: running twice adds nothing`, () => {
    const once = changed(addToLaunch(sample(name), ADDITIONS)).text;
    assert.deepEqual(addToLaunch(once, ADDITIONS), { kind: "unchanged" });
  });
}

test("new lines follow the file's own indentation and line ends", () => {
  const { text } = changed(addToLaunch(sample("tabs-crlf.json"), ADDITIONS));
  assert.ok(!/[^\r]\n/.test(text), "a bare \\n was written into a CRLF file");
  assert.ok(text.includes('\r\n\t\t{\r\n\t\t\t"name": "Python: Current File (all code)",'));
});

test("an existing configuration with the same name is left alone, not duplicated", () => {
  const original = sample("generated-by-vscode.jsonc");
  const first = changed(addToLaunch(original, folderAdditions(["train.py"], { debugpy: true }))).text;
  const second = changed(addToLaunch(first, folderAdditions(["train.py", "eval.py"], { debugpy: true })));
  assert.deepEqual(second.added, ["Quickdev: debug eval.py", "Quickdev: profile eval.py"]);
  assertOnlyInserted(first, second.text);
});

test("the attach configuration has no address: starting it shows the picker", () => {
  const { text } = changed(addToLaunch("", ADDITIONS));
  const configurations = parseStrictly(text).configurations as Record<string, unknown>[];
  const attach = configurations.find((configuration) => configuration.name === ATTACH_TO_RUNNING_JOB);
  assert.deepEqual(attach, { name: ATTACH_TO_RUNNING_JOB, type: "quickdev", request: "attach", justMyCode: false });
});

test("a launch.json generated before the attach configuration existed gets only that one", () => {
  const older = {
    configurations: ADDITIONS.configurations.filter((configuration) => configuration.name !== ATTACH_TO_RUNNING_JOB),
  };
  const before = changed(addToLaunch(sample("hand-written-trailing-commas.jsonc"), older)).text;
  const now = changed(addToLaunch(before, ADDITIONS));
  assert.deepEqual(now.added, [ATTACH_TO_RUNNING_JOB]);
  assertOnlyInserted(before, now.text);
  assert.deepEqual(addToLaunch(now.text, ADDITIONS), { kind: "unchanged" });
});

test("an empty or missing file becomes a complete launch.json", () => {
  const { text } = changed(addToLaunch("", ADDITIONS));
  const value = parseStrictly(text);
  assert.equal(value.version, "0.2.0");
  assert.equal((value.configurations as unknown[]).length, NEW_NAMES.length);
});

test("a malformed file is not edited and the problem names the line", () => {
  const outcome = addToLaunch(sample("malformed-missing-comma.jsonc"), ADDITIONS);
  assert.equal(outcome.kind, "malformed");
  assert.match((outcome as { problem: string }).problem, /CommaExpected at line 6/);
});

test("configurations that are not a list are reported, not overwritten", () => {
  const outcome = addToLaunch(sample("configurations-not-a-list.json"), ADDITIONS);
  assert.deepEqual(outcome, { kind: "malformed", problem: '"configurations" is not a list' });
});

test("a top level that is not an object is reported", () => {
  assert.equal(addToLaunch("[]", ADDITIONS).kind, "malformed");
});

const WORKSPACE_FOLDERS = [
  { name: "vision", entryScripts: ["train.py"] },
  { name: "text", entryScripts: ["lm/train.py"] },
];
const WORKSPACE = workspaceAdditions(WORKSPACE_FOLDERS, { debugpy: false });

test("a workspace file gets Attach and a compound of the folders' own debug configurations", () => {
  const original = sample("workspace-no-launch.code-workspace");
  const { text } = changed(addToLaunch(original, WORKSPACE, ["launch"]));
  assertOnlyInserted(original, text);
  const launch = parseStrictly(text).launch as {
    configurations: { name: string; request: string; justMyCode: boolean }[];
    compounds: { name: string; configurations: unknown[] }[];
  };
  assert.deepEqual(
    launch.configurations.map((c) => c.name),
    [ATTACH_TO_RUNNING_JOB],
  );
  assert.ok(launch.configurations.every((c) => c.justMyCode === false));
  assert.deepEqual(launch.compounds, [
    {
      name: COMPOUND,
      configurations: [
        { name: "Quickdev: debug train.py", folder: "vision" },
        { name: "Quickdev: debug lm/train.py", folder: "text" },
      ],
    },
  ]);
  assert.deepEqual(addToLaunch(text, WORKSPACE, ["launch"]), { kind: "unchanged" });
});

test("a multi-root workspace lists each configuration once: folders hold theirs, the workspace file the rest", () => {
  for (const debugpy of [false, true]) {
    const inFolders = WORKSPACE_FOLDERS.flatMap((folder) =>
      folderAdditions(folder.entryScripts, { debugpy, folderFree: false }).configurations.map(
        (c) => `${c.name} (${folder.name})`,
      ),
    );
    // VS Code's dropdown: folder configurations with their folder's name, the workspace file's bare.
    const workspace = workspaceAdditions(WORKSPACE_FOLDERS, { debugpy });
    const offered = [...inFolders, ...workspace.configurations.map((c) => c.name), COMPOUND];
    assert.equal(new Set(offered).size, offered.length, offered.join("\n"));
    assert.equal(offered.filter((name) => name.startsWith(ATTACH_TO_RUNNING_JOB)).length, 1);
    assert.equal(offered.filter((name) => name.startsWith(CURRENT_FILE)).length, debugpy ? 1 : 0);
    // Every member of the compound is a configuration of the folder it names.
    for (const member of workspace.compounds?.[0]?.configurations ?? []) {
      assert.ok(typeof member === "object" && offered.includes(`${member.name} (${member.folder})`));
    }
  }
  // A folder opened alone (no workspace file) still gets Attach.
  const alone = folderAdditions(["train.py"], { debugpy: false }).configurations.map((c) => c.name);
  assert.ok(alone.includes(ATTACH_TO_RUNNING_JOB));
});

test("a workspace file's existing launch block keeps its configurations, compounds and comments", () => {
  const original = sample("workspace-with-launch.code-workspace");
  const { text } = changed(addToLaunch(original, WORKSPACE, ["launch"]));
  assert.ok(text.includes("// shared attach config") && text.includes("// keep"));
  const launch = parseStrictly(text).launch as { configurations: { name: string }[]; compounds: { name: string }[] };
  assert.equal(launch.configurations[0]?.name, "attach 5678");
  assert.deepEqual(
    launch.compounds.map((compound) => compound.name),
    ["both", COMPOUND],
  );
  assert.deepEqual(addToLaunch(text, WORKSPACE, ["launch"]), { kind: "unchanged" });
});

test("entry scripts are written relative to their folder with forward slashes", () => {
  assert.equal(relativeScript("/home/u/proj", "/home/u/proj/tools/train.py"), "tools/train.py");
  assert.equal(relativeScript("C:\\proj\\", "C:\\proj\\train.py"), "train.py");
  assert.equal(relativeScript("/home/u/proj", "other/train.py"), "other/train.py");
});

test("an entry script that runs only as python -m gets module configurations, run from its folder", () => {
  const entry = { script: "src/pkg/train.py", module: "pkg.train", cwd: launchCwd("/home/u/proj", "/home/u/proj/src") };
  const [debug, profile] = folderAdditions([entry], { debugpy: false, folderFree: false }).configurations;
  assert.deepEqual(debug, {
    name: "Quickdev: debug src/pkg/train.py",
    type: "quickdev",
    request: "launch",
    mode: "debug",
    module: "pkg.train",
    cwd: "${workspaceFolder}/src",
    justMyCode: false,
  });
  assert.equal(profile.mode, "profile");
  assert.equal(profile.module, "pkg.train");
  assert.equal(launchCwd("/home/u/proj/", "/home/u/proj"), "${workspaceFolder}");
  assert.equal(launchCwd("/home/u/proj", "/opt/lib"), "/opt/lib");
});
