// What an interpreter has installed, and what to tell the user about it. No vscode import.

/** Printed as one JSON line by the probe below. */
export interface InterpreterReport {
  version: [number, number];
  executable: string;
  torch: string | null;
  tensorboard: boolean;
  torchTbProfiler: boolean;
}

// Finds packages without importing them: importing torch would cost seconds.
export const PROBE = [
  "import importlib.util as u, importlib.metadata as m, json, sys",
  "def v(n):",
  "    try: return m.version(n)",
  "    except Exception: return None",
  "print(json.dumps({'version': list(sys.version_info[:2]), 'executable': sys.executable,",
  " 'torch': v('torch') if u.find_spec('torch') else None,",
  " 'tensorboard': u.find_spec('tensorboard') is not None,",
  " 'torchTbProfiler': u.find_spec('torch_tb_profiler') is not None}))",
].join("\n");

export function parseReport(stdout: string): InterpreterReport {
  const lines = stdout.trim().split(/\r?\n/);
  const report = JSON.parse(lines[lines.length - 1] ?? "") as InterpreterReport;
  if (!Array.isArray(report.version) || typeof report.executable !== "string") {
    throw new Error(`unexpected interpreter report: ${stdout.trim()}`);
  }
  return report;
}

/** Versions match the `profile` extra in pyproject.toml. */
export const PROFILE_PACKAGES = ["tensorboard==2.21.0", "torch-tb-profiler==0.4.3"];

export function quoteForShell(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`;
}

export function pipInstallCommand(python: string, packages: readonly string[]): string {
  return [quoteForShell(python), "-m", "pip", "install", ...packages.map(quoteForShell)].join(" ");
}

export type Finding =
  | { kind: "tooOld"; message: string }
  | { kind: "noTorch"; message: string; command: string }
  | { kind: "noProfiler"; message: string; command: string };

/** The problems worth telling the user, most blocking first. */
export function findings(python: string, report: InterpreterReport): Finding[] {
  const [major, minor] = report.version;
  if (major < 3 || (major === 3 && minor < 10)) {
    return [
      {
        kind: "tooOld",
        message:
          `Quickdev needs Python 3.10 or newer; ${python} is ${major}.${minor}. ` +
          "Set quickdev.python to a newer interpreter.",
      },
    ];
  }
  const result: Finding[] = [];
  if (!report.torch) {
    const command = pipInstallCommand(python, ["torch"]);
    result.push({
      kind: "noTorch",
      message: `Quickdev: torch is not installed in ${python}. Install it with: ${command}`,
      command,
    });
  }
  const missing = PROFILE_PACKAGES.filter((spec) =>
    spec.startsWith("tensorboard") ? !report.tensorboard : !report.torchTbProfiler,
  );
  if (missing.length > 0) {
    const command = pipInstallCommand(python, missing);
    result.push({
      kind: "noProfiler",
      message:
        `Quickdev: profiling needs ${missing.map((spec) => spec.split("==")[0]).join(" and ")} ` +
        `in ${python}. Install now?`,
      command,
    });
  }
  return result;
}

/**
 * A short name for the status bar: a virtual environment's folder (".venv", "torch-env") with the
 * version, else the interpreter's file name ("python3 (3.11)").
 */
export function interpreterLabel(python: string, version?: string): string {
  const parts = python.split(/[/\\]/).filter(Boolean);
  const file = parts[parts.length - 1] ?? python;
  const bin = parts[parts.length - 2];
  const env = bin === "bin" || bin === "Scripts" ? parts[parts.length - 3] : undefined;
  const name = env && !["usr", "local", ""].includes(env) ? env : file;
  return version ? `${name} (${version})` : name;
}
