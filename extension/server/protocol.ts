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
  file?: string | null;
  line?: number | null;
}

/** Where a process's debugpy serves DAP. */
export interface Address {
  host: string;
  port: number;
  /** The process, when the server knows it (attachJob, attachPid). */
  pid?: number;
}

export interface RunSummary {
  runId: string;
  script: string;
  /** The script's arguments, as the job gave them to it. */
  args: string[];
  mode: JobMode;
  status: RunStatus;
  /** ISO-8601, UTC. */
  started: string;
  runDir: string;
  /** The run's result file (written when the job ends); the server owns the run directory's layout. */
  resultFile: string;
  /** The script's stdout and stderr, written while the job runs. */
  outputFile: string;
  durationS: number;
  batches: number;
  losses: number[];
  /** What the run did that a plain `python` run would not (one epoch, device, outputs kept, the budget that stopped it): one line each, as the terminal summary words them; empty until it ends. */
  changes: string[];
  error?: RunError;
  /** Runs this server started, while they run: what the job is doing (train, validate, …). */
  stage?: string;
  /** Runs this server started: optimizer steps so far. */
  steps?: number;
  /** A debug run this server started, once its debugpy listens. */
  attach?: Address;
}

export interface StartJobArgs {
  script: string;
  mode?: JobMode;
  cwd?: string;
  args?: string[];
  batches?: number;
  /** Variables for the job process, over the server's own environment. */
  env?: Record<string, string>;
  /** The job's interpreter, instead of the `python` setting. */
  python?: string;
  maxSteps?: number;
  /** Seconds. */
  timeout?: number;
  device?: "auto" | "cpu";
  nproc?: number;
}

export interface StartJobAnswer {
  runId: string;
  runDir: string;
  /** The script's arguments the job was given (suggested ones when the request had none). */
  args: string[];
  attach?: Address;
}

export interface AttachAnswer {
  attach: Address;
}

export interface TensorBoardAnswer {
  url: string;
  pid: number;
  run?: string;
}

export interface ScanAnswer {
  folders: { folder: string; entryScripts: { path: string; kind: string }[]; error?: string }[];
}

/**
 * The fields of each type above as docs/protocol.md lists them ("optional" where it may be
 * absent). The compiler holds these tables to the interfaces; a unit test holds them to the
 * document, so neither can drift from the other unnoticed.
 */
type Fields<T> = { readonly [K in keyof T]-?: object extends Pick<T, K> ? "optional" : "required" };

export const PROTOCOL_FIELDS = {
  StartJobArgs: {
    script: "required",
    mode: "optional",
    cwd: "optional",
    args: "optional",
    batches: "optional",
    env: "optional",
    python: "optional",
    maxSteps: "optional",
    timeout: "optional",
    device: "optional",
    nproc: "optional",
  } satisfies Fields<StartJobArgs>,
  StartJobAnswer: { runId: "required", runDir: "required", args: "required", attach: "optional" } satisfies Fields<StartJobAnswer>,
  RunSummary: {
    runId: "required",
    script: "required",
    args: "required",
    mode: "required",
    status: "required",
    started: "required",
    runDir: "required",
    resultFile: "required",
    outputFile: "required",
    durationS: "required",
    batches: "required",
    losses: "required",
    changes: "required",
    error: "optional",
    stage: "optional",
    steps: "optional",
    attach: "optional",
  } satisfies Fields<RunSummary>,
  RunError: { message: "required", file: "optional", line: "optional" } satisfies Fields<RunError>,
  Address: { host: "required", port: "required", pid: "optional" } satisfies Fields<Address>,
  AttachAnswer: { attach: "required" } satisfies Fields<AttachAnswer>,
  TensorBoardAnswer: { url: "required", pid: "required", run: "optional" } satisfies Fields<TensorBoardAnswer>,
} as const;

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
  runWithArguments: "quickdev.lens.runWithArguments",
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
