// The `quickdev` debug configurations and the pure steps between them: F5's default, a launch
// turned into an attach to the job it started, an attach given the address it was missing.
// No vscode import at run time: unit tests load this module under plain node.
import type * as vscode from "vscode";
import type { LimitArguments } from "../common/optionTable";
import SESSION_RULES from "./sessionRules.json";

export const DEBUG_TYPE = "quickdev";

export interface Address {
  host: string;
  port: number;
}

/** The limits (`batches`, `maxSteps`, `timeout`, …) come from the option table (optionTable.ts). */
export interface QuickdevConfiguration extends vscode.DebugConfiguration, LimitArguments {
  script?: string;
  /** The Python Debugger's name for `script`. */
  program?: string;
  /** Instead of a script: a module, run as `python -m` does from `cwd`. */
  module?: string;
  mode?: "debug" | "profile" | "run";
  /** `true`: the same as `"mode": "profile"`. */
  profile?: boolean;
  cwd?: string;
  args?: string[] | string;
  env?: Record<string, string | null>;
  envFile?: string;
  python?: string;
  device?: "auto" | "cpu";
  nproc?: number;
  /** `true`: forecast the GPU memory of a training step against this machine's GPU (else the setting's devices); a string names the devices. */
  memoryForecast?: boolean | string;
  /** The NaN hunt: train until the first NaN/Inf and stop where it was made. */
  findNonfinite?: boolean;
  connect?: { host?: string; port?: number };
  /** Set on the attach session a launch became: the run to cancel when the user stops. */
  quickdevRunId?: string;
  /** Set by "Debug this step": the breakpoint to remove once hit or when the session ends. */
  quickdevTemporaryBreakpoint?: string;
}

/**
 * What every quickdev session asks of the process's debugpy: the script's output in the Debug
 * Console (the in-process adapter sends it as DAP output events), and Quickdev's own frames (the
 * job's runner, the limits wrapped around the user's loaders and steps) left out of call stacks
 * and stepping, as the Python Debugger's `rules` do. `python -m quickdev` and a warm start's
 * `python -m quickdev.warm` run their __main__ as `__main__`, so those files need path rules of
 * their own. The rules are a JSON file the Python tests read too.
 */
export const SESSION_OPTIONS = {
  justMyCode: false,
  redirectOutput: true,
  rules: SESSION_RULES,
} as const;

/** F5 with no launch.json hands over an empty configuration. */
export function isEmpty(config: vscode.DebugConfiguration): boolean {
  return !config.type && !config.request && !config.name;
}

export const CURRENT_FILE_DEFAULT: QuickdevConfiguration = {
  type: DEBUG_TYPE,
  request: "launch",
  name: "Quickdev: debug current file",
  script: "${file}",
};

/** The attach session a debug launch becomes once its job's debugpy listens at `address`. */
export function attachToStartedJob(
  config: QuickdevConfiguration,
  runId: string,
  address: Address,
): QuickdevConfiguration {
  return {
    type: DEBUG_TYPE,
    name: config.name,
    request: "attach",
    connect: address,
    ...SESSION_OPTIONS,
    quickdevRunId: runId,
    quickdevTemporaryBreakpoint: config.quickdevTemporaryBreakpoint,
  };
}

/** An attach configuration given the address (and label) of the process picked for it. */
export function attachToPicked(
  config: QuickdevConfiguration,
  target: Address & { label: string },
): QuickdevConfiguration {
  // No quickdevRunId: stopping this session detaches and leaves the long job running.
  return {
    ...config,
    name: `${config.name}: ${target.label}`,
    connect: { host: target.host, port: target.port },
    ...SESSION_OPTIONS,
  };
}

/** Where the adapter listens, or undefined when the configuration has no address yet. */
export function adapterAddress(config: QuickdevConfiguration): Address | undefined {
  const port = config.connect?.port;
  return config.request === "attach" && port ? { host: config.connect?.host ?? "127.0.0.1", port } : undefined;
}
