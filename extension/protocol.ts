// Types of the language server's commands and notifications (docs/protocol.md). No vscode import:
// unit tests load this module under plain node.

export type RunStatus =
  | "queued"
  | "running"
  | "passed"
  | "failed"
  | "stopped"
  | "killed"
  | "cancelled";

export type JobMode = "run" | "profile" | "debug";

export interface RunError {
  message: string;
  file?: string;
  line?: number;
}

export interface RunSummary {
  runId: string;
  script: string;
  mode: JobMode;
  status: RunStatus;
  /** ISO-8601, UTC. */
  started?: string | null;
  runDir: string;
  durationS?: number | null;
  batches?: number | null;
  losses?: number[] | null;
  error?: RunError | null;
  /** Runs this server started, while they run: what the job is doing (train, validate, …). */
  stage?: string | null;
}

export interface StartJobArgs {
  script: string;
  mode: JobMode;
  cwd?: string;
  args?: string[];
  batches?: number;
  breakAt?: { file: string; line: number };
}

export interface StartJobAnswer {
  runId: string;
  runDir: string;
  attach?: { host: string; port: number };
}

export interface TensorBoardAnswer {
  url: string;
  pid: number;
  run?: string;
}

export interface ScanAnswer {
  folders: { folder: string; entryScripts: { path: string; kind: string }[] }[];
}

/** Every command answers either its result or `{"error": "..."}` (a line to show as is). */
export type Answer<T> = T | { error: string };

export function isError<T>(answer: Answer<T>): answer is { error: string } {
  return (
    typeof answer === "object" &&
    answer !== null &&
    typeof (answer as { error?: unknown }).error === "string"
  );
}

const FINISHED: ReadonlySet<RunStatus> = new Set<RunStatus>([
  "passed",
  "failed",
  "stopped",
  "killed",
  "cancelled",
]);

export function isFinished(status: RunStatus): boolean {
  return FINISHED.has(status);
}

export const LENS_COMMANDS = {
  run: "quickdev.lens.run",
  debug: "quickdev.lens.debug",
  profile: "quickdev.lens.profile",
  debugStep: "quickdev.lens.debugStep",
} as const;

export const RUN_CHANGED = "quickdev/runChanged";

/** The argument of a lens command: `[{"script", "file"?, "line"?}]`, line 0-based. */
export interface LensArgument {
  script: string;
  file?: string;
  line?: number;
}

export function parseLensArgument(value: unknown): LensArgument | undefined {
  if (typeof value !== "object" || value === null) {
    return undefined;
  }
  const { script, file, line } = value as Record<string, unknown>;
  if (typeof script !== "string" || script === "") {
    return undefined;
  }
  if (line !== undefined && (typeof line !== "number" || !Number.isInteger(line) || line < 0)) {
    return undefined;
  }
  if (file !== undefined && (typeof file !== "string" || file === "")) {
    return undefined;
  }
  return { script, file: file as string | undefined, line: line as number | undefined };
}
