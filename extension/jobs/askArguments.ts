// "Run with Arguments…": asks for a script's arguments, offering the last ones typed for that
// script (kept per script in the workspace's state, as VS Code keeps a workspace's choices).
import * as path from "node:path";
import * as vscode from "vscode";
import { type ArgumentMemory, lastArguments, rememberArguments, splitArguments } from "./arguments";
import type { JobTarget } from "./jobs";

/** The arguments for `job`, or undefined when the user cancelled the prompt. */
export async function askArguments(memory: ArgumentMemory, job: JobTarget): Promise<string[] | undefined> {
  // A module is remembered by its name and the folder it runs from, as a script by its path.
  const key = "script" in job ? job.script : `-m ${job.module} ${job.cwd ?? ""}`.trim();
  const last = lastArguments(memory, key) ?? "";
  const typed = await vscode.window.showInputBox({
    title: `Quickdev: arguments for ${"script" in job ? path.basename(job.script) : job.module}`,
    prompt: "The script's command-line arguments, as typed after the script in a terminal",
    placeHolder: "config/train.py --batch_size=8",
    value: last,
    valueSelection: [0, last.length],
    ignoreFocusOut: true,
  });
  if (typed === undefined) {
    return undefined;
  }
  await rememberArguments(memory, key, typed.trim());
  return splitArguments(typed);
}
