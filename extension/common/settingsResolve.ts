// Settings resolution without vscode, so it is unit-tested under plain node.
import * as os from "node:os";
import * as path from "node:path";

export interface LensSettings {
  run: boolean;
  debug: boolean;
  profile: boolean;
  step: boolean;
}

/** The `quickdev.*` settings; defaults live only in package.json. */
export interface QuickdevSettings {
  python: string;
  batches: number;
  /** 0: the script's own batch size; else passed to its --batch-size-like option. */
  batchSize: number;
  runsDir: string;
  keepOutputs: boolean;
  /** Run history: runs kept, and its size cap in MB (0: no limit). */
  runsKeep: number;
  runsMaxSizeMb: number;
  /** Jobs record the tensors each line binds; the editor shows their shapes. */
  tensorShapes: boolean;
  lenses: LensSettings;
}

export const SETTING_KEYS: readonly (keyof QuickdevSettings)[] = [
  "python",
  "batches",
  "batchSize",
  "runsDir",
  "keepOutputs",
  "runsKeep",
  "runsMaxSizeMb",
  "tensorShapes",
  "lenses",
];

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
