// Settings resolution without vscode, so it is unit-tested under plain node.
import * as os from "node:os";
import * as path from "node:path";
import { LIMIT_SETTINGS, type LimitSettings } from "./optionTable";

export interface LensSettings {
  run: boolean;
  debug: boolean;
  profile: boolean;
  nonfinite: boolean;
  step: boolean;
  /** The memory forecast lens above an entry point. */
  memory: boolean;
}

/** The `quickdev.*` settings; defaults live only in package.json. The limits (`batches`, `stepSeconds`) come from the option table. */
export interface QuickdevSettings extends LimitSettings {
  python: string;
  /** 0: the script's own batch size; else passed to its --batch-size-like option. */
  batchSize: number;
  runsDir: string;
  keepOutputs: boolean;
  /** Run history: runs kept, and its size cap in MB (0: no limit). */
  runsKeep: number;
  runsMaxSizeMb: number;
  /** Jobs fork from a warm process that has done their imports. */
  warmStart: boolean;
  /** What a memory forecast is compared with where the job's machine has no GPU. */
  memoryForecastDevices: string[];
  /** Jobs record the tensors each line binds; the editor shows their shapes. */
  tensorShapes: boolean;
  lenses: LensSettings;
}

/**
 * Every setting the server receives, with the type package.json declares for it. The compiler
 * holds the keys to QuickdevSettings, and the reader below reads exactly these keys, so a setting
 * cannot be declared and typed yet never sent.
 */
export const SERVER_SETTINGS = {
  ...LIMIT_SETTINGS,
  python: "string",
  batchSize: "integer",
  runsDir: "string",
  keepOutputs: "boolean",
  runsKeep: "integer",
  runsMaxSizeMb: "integer",
  warmStart: "boolean",
  memoryForecastDevices: "array",
  tensorShapes: "boolean",
  lenses: "object",
} as const satisfies Record<keyof QuickdevSettings, "string" | "integer" | "number" | "boolean" | "array" | "object">;

export const SETTING_KEYS = Object.keys(SERVER_SETTINGS) as (keyof QuickdevSettings)[];

/**
 * Settings the extension uses itself and never sends: the job's environment (read per folder,
 * sent as a job's `env`) and the language client's own trace.
 */
export const EXTENSION_SETTINGS = ["envFile", "env", "trace.server"] as const;

/**
 * The settings as written, through `get` (VS Code's configuration, package.json's defaults
 * filled in); a key without a value means a broken manifest.
 */
export function settingsFrom(get: (key: keyof QuickdevSettings) => unknown): QuickdevSettings {
  const entries = SETTING_KEYS.map((key) => {
    const value = get(key);
    if (value === undefined) {
      throw new Error(`package.json declares no default for quickdev.${key}`);
    }
    return [key, value] as const;
  });
  return Object.fromEntries(entries) as unknown as QuickdevSettings;
}

export interface VariableContext {
  /** The folder `${workspaceFolder}` means; undefined outside a workspace. */
  workspaceFolder?: string;
  /** Folder name → path, for `${workspaceFolder:Name}`. */
  folders?: Readonly<Record<string, string>>;
  env: Readonly<Record<string, string | undefined>>;
  home?: string;
}

/**
 * Expands `${workspaceFolder}`, `${workspaceFolder:Name}`, `${userHome}`, `${env:NAME}` and a
 * leading `~`. A variable that cannot be resolved is left as written, so the error the user
 * later sees names it.
 */
export function resolveVariables(value: string, context: VariableContext): string {
  const home = context.home ?? os.homedir();
  let result = value.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
    if (name === "workspaceFolder") {
      return context.workspaceFolder ?? whole;
    }
    if (name.startsWith("workspaceFolder:")) {
      return context.folders?.[name.slice("workspaceFolder:".length)] ?? whole;
    }
    if (name === "userHome") {
      return home;
    }
    if (name.startsWith("env:")) {
      return context.env[name.slice("env:".length)] ?? "";
    }
    return whole;
  });
  if (result === "~" || result.startsWith("~/") || result.startsWith("~\\")) {
    result = path.join(home, result.slice(1));
  }
  return result;
}

export type InterpreterSource = "setting" | "python-extension" | "default";

export interface Interpreter {
  path: string;
  source: InterpreterSource;
}

export const DEFAULT_INTERPRETER = process.platform === "win32" ? "python" : "python3";

/**
 * The interpreter for the server and its jobs: the `quickdev.python` setting, else the Python
 * extension's active environment, else `python3` from PATH.
 */
export function pickInterpreter(
  setting: string,
  fromPythonExtension: string | undefined,
  context: VariableContext,
): Interpreter {
  const configured = setting.trim();
  if (configured) {
    return { path: resolveVariables(configured, context), source: "setting" };
  }
  if (fromPythonExtension?.trim()) {
    return { path: fromPythonExtension.trim(), source: "python-extension" };
  }
  return { path: DEFAULT_INTERPRETER, source: "default" };
}
