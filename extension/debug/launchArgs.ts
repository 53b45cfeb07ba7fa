// A launch configuration, as Python users write it, turned into the server's startJob argument.
// No vscode import: unit tests load this module under plain node.
import { type Environment, mergeEnvironment } from "../common/environment";
import { LIMIT_ARGUMENTS } from "../common/optionTable";
import { splitArguments } from "../jobs/arguments";
import type { JobMode, StartJobArgs } from "../server/protocol";
import type { QuickdevConfiguration } from "./configuration";

/** `"memoryForecast": true` asks for this machine's GPU (else the setting's devices); false or absent, none. */
export function forecastDevices(value: boolean | string | undefined): string | undefined {
  return value === true ? "auto" : typeof value === "string" ? value : undefined;
}

/** `mode` wins; `"profile": true` stands for `"mode": "profile"`; a launch debugs by default. */
export function launchMode(config: QuickdevConfiguration): JobMode {
  return config.mode ?? (config.profile ? "profile" : "debug");
}

/**
 * The startJob argument for `config` (variables already substituted), with `fileEnv` (the
 * envFile or the folder's .env) under the configuration's own `env`; a one-line error for a
 * value the job could not use.
 */
export function startJobArgs(config: QuickdevConfiguration, fileEnv: Environment): StartJobArgs | { error: string } {
  const script = config.script ?? config.program;
  if (config.module && script) {
    return {
      error: `the launch configuration "${config.name}" names both "module" and "program"; keep the one to run`,
    };
  }
  if (!script && !config.module) {
    return {
      error: `the launch configuration "${config.name}" has no "program" (or "module"); add the training script's path`,
    };
  }
  const merged = mergeEnvironment(fileEnv, config.env);
  if ("error" in merged) {
    return merged;
  }
  // A string of arguments, as the Python Debugger allows, splits as a shell would (the same
  // words as Run with Arguments: quotes keep an argument's spaces).
  const args = typeof config.args === "string" ? splitArguments(config.args) : config.args;
  const target = config.module ? { module: config.module } : { script };
  const start: StartJobArgs = { ...target, mode: launchMode(config), env: merged.env };
  const limits = Object.keys(LIMIT_ARGUMENTS) as (keyof typeof LIMIT_ARGUMENTS)[];
  const optional = {
    ...Object.fromEntries(limits.map((key) => [key, config[key]])),
    cwd: config.cwd,
    args,
    python: config.python,
    device: config.device,
    nproc: config.nproc,
    memoryForecast: forecastDevices(config.memoryForecast),
    findNonfinite: config.findNonfinite,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined && value !== "") {
      (start as unknown as Record<string, unknown>)[key] = value;
    }
  }
  return start;
}
