// "Attach to Running Job": pick a live quick-dev run (or any Python process) and ask the language
// server to make it accept a debugger. Answers where to attach; the debug session is debug/index.ts's.
import * as path from "node:path";
import * as vscode from "vscode";
import { log } from "../common/logger";
import { type PythonProcess, listPythonProcesses } from "./processList";
import { type Address, type CommandArgument, type RunSummary, isError } from "../server/protocol";
import type { QuickdevServer } from "../server/server";

export interface AttachTarget {
  host: string;
  port: number;
  /** What was attached to, for the debug session's name. */
  label: string;
}

type Choice = vscode.QuickPickItem & ({ run: RunSummary } | { otherProcess: true });

export const OTHER_PROCESS_LABEL = "$(search) Other Python process…";

function startedAt(run: RunSummary): string {
  const started = run.started ? new Date(run.started) : undefined;
  return started && !Number.isNaN(started.getTime()) ? `started ${started.toLocaleString()}` : "";
}

async function liveRuns(server: QuickdevServer): Promise<RunSummary[] | undefined> {
  const answer = await server.command("quickdev.listRuns", {});
  if (isError(answer)) {
    void vscode.window.showErrorMessage(answer.error);
    return undefined;
  }
  return answer.runs.filter((run) => run.status === "running");
}

async function pickProcess(): Promise<PythonProcess | undefined> {
  const processes = await listPythonProcesses(new Set([process.pid]));
  if (processes.length === 0) {
    void vscode.window.showInformationMessage("Quickdev: no other Python process is running on this machine.");
    return undefined;
  }
  const chosen = await vscode.window.showQuickPick(
    processes.map((p) => ({ label: String(p.pid), description: p.command, process: p })),
    { title: "Quickdev: attach to a Python process", placeHolder: "PID and command line", matchOnDescription: true },
  );
  return chosen?.process;
}

async function ask<C extends "quickdev.attachJob" | "quickdev.attachPid">(
  server: QuickdevServer,
  title: string,
  command: C,
  argument: CommandArgument<C>,
): Promise<Address | undefined> {
  const answer = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, () =>
    server.command(command, argument),
  );
  if (isError(answer)) {
    void vscode.window.showErrorMessage(`Quickdev: ${answer.error}`);
    return undefined;
  }
  log.info(`${command} ${JSON.stringify(argument)}: debugpy on ${answer.attach.host}:${answer.attach.port}`);
  return answer.attach;
}

/** Shows the picker and readies the chosen process; undefined when cancelled or impossible. */
export async function pickAttachTarget(server: QuickdevServer): Promise<AttachTarget | undefined> {
  const runs = await liveRuns(server);
  if (!runs) {
    return undefined;
  }
  const items: Choice[] = runs.map((run) => ({
    label: path.basename(run.script),
    description: run.runId,
    detail: [startedAt(run), run.script].filter(Boolean).join(" · "),
    run,
  }));
  items.push({ label: OTHER_PROCESS_LABEL, detail: "Any Python process on this machine, by PID", otherProcess: true });
  const chosen = await vscode.window.showQuickPick(items, {
    title: "Quickdev: Attach to Running Job",
    placeHolder: runs.length ? "A running quick-dev job" : "No quick-dev job is running: pick another Python process",
    matchOnDescription: true,
  });
  if (!chosen) {
    return undefined;
  }
  if ("run" in chosen) {
    const { run } = chosen;
    const name = path.basename(run.script);
    const address = await ask(server, `Quickdev: asking ${name} to accept the debugger`, "quickdev.attachJob", {
      runId: run.runId,
      runDir: run.runDir,
    });
    return address && { ...address, label: `${name} (${run.runId})` };
  }
  const target = await pickProcess();
  if (!target) {
    return undefined;
  }
  const address = await ask(server, `Quickdev: attaching to PID ${target.pid}`, "quickdev.attachPid", {
    pid: target.pid,
  });
  return address && { ...address, label: `PID ${target.pid}` };
}
