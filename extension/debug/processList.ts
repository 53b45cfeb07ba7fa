// The Python processes "Attach to Running Job" offers besides quick-dev jobs. No vscode import:
// unit tests load this module under plain node.
import { execFile } from "node:child_process";
import { readFile, readdir } from "node:fs/promises";
import { promisify } from "node:util";

export interface PythonProcess {
  pid: number;
  command: string;
}

// Processes of our own that a user never wants to attach to: the language server, debug adapters.
const OURS = [/-m quickdev serve\b/, /\bdebugpy[/\\]adapter\b/, /-m debugpy\.adapter\b/];

/** Whether a command line runs Python: its program is python, python3, python3.11, pythonw… */
export function isPythonCommand(command: string): boolean {
  const program = command.trim().split(/\s+/)[0] ?? "";
  const name = program.split(/[/\\]/).pop() ?? "";
  return /^python(\d+(\.\d+)*)?w?(\.exe)?$/i.test(name);
}

/** Keeps the Python processes worth attaching to, newest (highest PID) first. */
export function pythonProcesses(all: readonly PythonProcess[], exclude: ReadonlySet<number>): PythonProcess[] {
  return all
    .filter((p) => !exclude.has(p.pid) && isPythonCommand(p.command) && !OURS.some((ours) => ours.test(p.command)))
    .sort((a, b) => b.pid - a.pid);
}

/** `ps -axo pid=,args=` output: one process a line, its PID then its command line. */
export function parsePs(text: string): PythonProcess[] {
  const found: PythonProcess[] = [];
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(\d+)\s+(.+?)\s*$/.exec(line);
    if (match) {
      found.push({ pid: Number(match[1]), command: match[2] });
    }
  }
  return found;
}

/** /proc/PID/cmdline: arguments separated (and ended) by NUL bytes. */
export function parseCmdline(raw: string): string {
  return raw
    .split("\0")
    .filter((arg) => arg !== "")
    .join(" ");
}

async function fromProc(): Promise<PythonProcess[]> {
  const pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
  const read = await Promise.all(
    pids.map(async (pid) => {
      try {
        return { pid: Number(pid), command: parseCmdline(await readFile(`/proc/${pid}/cmdline`, "utf8")) };
      } catch {
        return undefined; // ended meanwhile, or not ours to read
      }
    }),
  );
  return read.filter((p): p is PythonProcess => p !== undefined && p.command !== "");
}

async function fromPs(): Promise<PythonProcess[]> {
  const { stdout } = await promisify(execFile)("ps", ["-axo", "pid=,args="], { maxBuffer: 16 * 1024 * 1024 });
  return parsePs(stdout);
}

/** Python processes on this machine: /proc where there is one (Linux), else `ps` (macOS). */
export async function listPythonProcesses(exclude: ReadonlySet<number>): Promise<PythonProcess[]> {
  let all: PythonProcess[];
  try {
    all = await fromProc();
  } catch {
    all = await fromPs();
  }
  return pythonProcesses(all, exclude);
}
