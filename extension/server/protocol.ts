// Types of the language server's commands and notifications (docs/protocol.md). No vscode import:
// unit tests load this module under plain node.
import { LIMIT_ARGUMENTS, type LimitArguments } from "../common/optionTable";
import type { QuickdevSettings } from "../common/settingsResolve";

export type RunStatus = "queued" | "running" | "passed" | "failed" | "stopped" | "killed" | "cancelled" | "error";

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
  /** A NaN or infinite loss is null: JSON has no NaN. */
  losses: (number | null)[];
  /** What the run did that a plain `python` run would not (one epoch, device, outputs kept, the budget that stopped it): one line each, as the terminal summary words them; empty until it ends. */
  changes: string[];
  /** Why a finished run is not a clean pass (a NaN loss, no training step, an error of Quickdev's own), the deciding one first, as the terminal summary words them; empty for a clean pass or before the end. */
  verdict: string[];
  /** A job run as `python -m`: the module (`script` is then its file, or its name for a run on disk). */
  module?: string;
  error?: RunError;
  /** Runs this server started, while they run: what the job is doing (train, validate, …). */
  stage?: string;
  /** Runs this server started: optimizer steps so far. */
  steps?: number;
  /** A debug run this server started, once its debugpy listens. */
  attach?: Address;
  /** A run with a memory forecast: its one line ("≈ 11.2 GB peak · fits 24 GB"). */
  memoryForecast?: string;
  /** A NaN hunt (`--find-nonfinite`): Run Again hunts again. */
  findNonfinite?: boolean;
}

/** What a job runs: `script`, or `module` as `python -m` does (from `cwd`); the server takes one. */
/** The limits (`batches`, `maxSteps`, `timeout`, …) come from the option table (optionTable.ts). */
export interface StartJobArgs extends LimitArguments {
  script?: string;
  module?: string;
  mode?: JobMode;
  cwd?: string;
  args?: string[];
  /** Variables for the job process, over the server's own environment. */
  env?: Record<string, string>;
  /** The job's interpreter, instead of the `python` setting. */
  python?: string;
  device?: "auto" | "cpu";
  nproc?: number;
  /** Forecast the GPU memory of a training step: "auto" (this machine's GPU, else the memoryForecastDevices setting) or devices ("24", "h100", "24,40"). */
  memoryForecast?: string;
  /** The NaN hunt (`quickdev run --find-nonfinite`). */
  findNonfinite?: boolean;
}

export interface StartJobAnswer {
  runId: string;
  runDir: string;
  /** The script's arguments the job was given (suggested ones when the request had none). */
  args: string[];
  attach?: Address;
}

/** The argument of the commands about one run. */
export interface RunRef {
  runId: string;
}

export interface CancelAnswer {
  cancelled: boolean;
}

export interface RunList {
  runs: RunSummary[];
}

export interface RunDetail {
  run: RunSummary;
  /** result.json as the job wrote it; null before the job ends. */
  result: unknown;
}

export interface DeleteAnswer {
  deleted: string;
}

export interface TensorBoardArgs {
  runId?: string;
}

export interface TensorBoardAnswer {
  url: string;
  pid: number;
  run?: string;
}

export interface SourceArgs {
  filename: string;
  runId?: string;
}

export interface SourceAnswer {
  path: string;
}

/** A run (by id, or its directory for a job started elsewhere) to make accept a debugger. */
export interface AttachJobArgs {
  runId?: string;
  runDir?: string;
}

export interface AttachPidArgs {
  pid: number;
}

export interface AttachAnswer {
  attach: Address;
}

export interface ScanArgs {
  folders?: string[];
}

export interface ScannedScript {
  path: string;
  kind: string;
  /** A script that runs only as `python -m`: the module, and the folder to run it from. */
  module?: string;
  cwd?: string;
}

export interface ScannedFolder {
  folder: string;
  entryScripts: ScannedScript[];
  error?: string;
}

export interface ScanAnswer {
  folders: ScannedFolder[];
}

/** Tensor shapes forgotten until the next run. */
export interface ClearShapesAnswer {
  /** Files whose shapes were cleared. */
  cleared: number;
}

/** A command that takes no argument: `{}`. */
export type NoArgument = Record<string, never>;

/** Every type docs/protocol.md describes, by the name it has there. */
export interface ProtocolTypes {
  Settings: QuickdevSettings;
  StartJobArgs: StartJobArgs;
  StartJobAnswer: StartJobAnswer;
  RunRef: RunRef;
  CancelAnswer: CancelAnswer;
  RunList: RunList;
  RunDetail: RunDetail;
  DeleteAnswer: DeleteAnswer;
  TensorBoardArgs: TensorBoardArgs;
  TensorBoardAnswer: TensorBoardAnswer;
  SourceArgs: SourceArgs;
  SourceAnswer: SourceAnswer;
  AttachJobArgs: AttachJobArgs;
  AttachPidArgs: AttachPidArgs;
  AttachAnswer: AttachAnswer;
  ScanArgs: ScanArgs;
  ScanAnswer: ScanAnswer;
  ScannedFolder: ScannedFolder;
  ScannedScript: ScannedScript;
  ClearShapesAnswer: ClearShapesAnswer;
  RunSummary: RunSummary;
  RunError: RunError;
  Address: Address;
}

/**
 * Each `quickdev.*` command's argument and answer, by type name ("{}": no argument), as
 * docs/protocol.md's command table lists them. QuickdevServer.command takes its argument and
 * answer types from here, so a wrong argument is a compile error; a unit test holds this table
 * to the document.
 */
export const COMMANDS = {
  "quickdev.startJob": { argument: "StartJobArgs", answer: "StartJobAnswer" },
  "quickdev.cancelJob": { argument: "RunRef", answer: "CancelAnswer" },
  "quickdev.listRuns": { argument: "{}", answer: "RunList" },
  "quickdev.getRun": { argument: "RunRef", answer: "RunDetail" },
  "quickdev.deleteRun": { argument: "RunRef", answer: "DeleteAnswer" },
  "quickdev.openTensorBoard": { argument: "TensorBoardArgs", answer: "TensorBoardAnswer" },
  "quickdev.resolveSource": { argument: "SourceArgs", answer: "SourceAnswer" },
  "quickdev.attachJob": { argument: "AttachJobArgs", answer: "AttachAnswer" },
  "quickdev.attachPid": { argument: "AttachPidArgs", answer: "AttachAnswer" },
  "quickdev.scanWorkspace": { argument: "ScanArgs", answer: "ScanAnswer" },
  "quickdev.clearShapes": { argument: "{}", answer: "ClearShapesAnswer" },
} as const satisfies Record<string, { argument: keyof ProtocolTypes | "{}"; answer: keyof ProtocolTypes }>;

export type CommandName = keyof typeof COMMANDS;
type TypeNamed<N> = N extends keyof ProtocolTypes ? ProtocolTypes[N] : NoArgument;
export type CommandArgument<C extends CommandName> = TypeNamed<(typeof COMMANDS)[C]["argument"]>;
export type CommandAnswer<C extends CommandName> = TypeNamed<(typeof COMMANDS)[C]["answer"]>;

/**
 * The fields of each type above as docs/protocol.md lists them ("optional" where it may be
 * absent). The compiler holds these tables to the interfaces; a unit test holds them to the
 * document, so neither can drift from the other unnoticed.
 */
type Fields<T> = { readonly [K in keyof T]-?: object extends Pick<T, K> ? "optional" : "required" };

export const PROTOCOL_FIELDS = {
  Settings: {
    python: "required",
    batches: "required",
    batchSize: "required",
    stepSeconds: "required",
    runsDir: "required",
    keepOutputs: "required",
    runsKeep: "required",
    runsMaxSizeMb: "required",
    warmStart: "required",
    memoryForecastDevices: "required",
    tensorShapes: "required",
    lenses: "required",
  },
  StartJobArgs: {
    ...LIMIT_ARGUMENTS,
    script: "optional",
    module: "optional",
    mode: "optional",
    cwd: "optional",
    args: "optional",
    env: "optional",
    python: "optional",
    device: "optional",
    nproc: "optional",
    memoryForecast: "optional",
    findNonfinite: "optional",
  },
  StartJobAnswer: { runId: "required", runDir: "required", args: "required", attach: "optional" },
  RunRef: { runId: "required" },
  CancelAnswer: { cancelled: "required" },
  RunList: { runs: "required" },
  RunDetail: { run: "required", result: "required" },
  DeleteAnswer: { deleted: "required" },
  TensorBoardArgs: { runId: "optional" },
  TensorBoardAnswer: { url: "required", pid: "required", run: "optional" },
  SourceArgs: { filename: "required", runId: "optional" },
  SourceAnswer: { path: "required" },
  AttachJobArgs: { runId: "optional", runDir: "optional" },
  AttachPidArgs: { pid: "required" },
  AttachAnswer: { attach: "required" },
  ScanArgs: { folders: "optional" },
  ScanAnswer: { folders: "required" },
  ScannedFolder: { folder: "required", entryScripts: "required", error: "optional" },
  ScannedScript: { path: "required", kind: "required", module: "optional", cwd: "optional" },
  ClearShapesAnswer: { cleared: "required" },
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
    verdict: "required",
    module: "optional",
    error: "optional",
    stage: "optional",
    steps: "optional",
    attach: "optional",
    memoryForecast: "optional",
    findNonfinite: "optional",
  },
  RunError: { message: "required", file: "optional", line: "optional" },
  Address: { host: "required", port: "required", pid: "optional" },
} as const satisfies { [Name in keyof ProtocolTypes]: Fields<ProtocolTypes[Name]> };

/** Every command answers either its result or `{"error": "..."}` (a line to show as is). */
export type Answer<T> = T | { error: string };

export function isError<T>(answer: Answer<T>): answer is { error: string } {
  return typeof answer === "object" && answer !== null && typeof (answer as { error?: unknown }).error === "string";
}

const FINISHED: ReadonlySet<RunStatus> = new Set<RunStatus>([
  "passed",
  "failed",
  "stopped",
  "killed",
  "cancelled",
  "error",
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
  memoryForecast: "quickdev.lens.memoryForecast",
  findNonfinite: "quickdev.lens.findNonfinite",
} as const;

export const RUN_CHANGED = "quickdev/runChanged";

/** The lens above a file's first shape hint (the extension registers it; it calls
 * `quickdev.clearShapes`); it has no arguments. */
export const CLEAR_SHAPES_LENS = "quickdev.lens.clearShapes";

/**
 * The argument of a lens command: `[{"script", "module"?, "cwd"?, "file"?, "line"?}]`, line
 * 0-based; `module` (with the folder to run it from) for a script that runs only as `python -m`.
 */
export interface LensArgument {
  script: string;
  module?: string;
  cwd?: string;
  file?: string;
  line?: number;
}

export function parseLensArgument(value: unknown): LensArgument | undefined {
  if (typeof value !== "object" || value === null) {
    return undefined;
  }
  const { script, module, cwd, file, line } = value as Record<string, unknown>;
  if (typeof script !== "string" || script === "") {
    return undefined;
  }
  if (module !== undefined && (typeof module !== "string" || module === "" || typeof cwd !== "string")) {
    return undefined;
  }
  if (line !== undefined && (typeof line !== "number" || !Number.isInteger(line) || line < 0)) {
    return undefined;
  }
  if (file !== undefined && (typeof file !== "string" || file === "")) {
    return undefined;
  }
  const asModule = typeof module === "string" ? { module, cwd: cwd as string } : {};
  return { script, ...asModule, file, line };
}
