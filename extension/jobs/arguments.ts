// A script's command-line arguments as a person types them in a prompt, and as the Runs view and
// the result pages show them. No vscode import.

/**
 * Splits `text` as a POSIX shell splits a command line, without expansions: whitespace between
 * arguments, '…' taken literally, "…" and a backslash escaping the next character. An unclosed
 * quote ends the text (the argument keeps what was typed).
 */
export function splitArguments(text: string): string[] {
  const args: string[] = [];
  let current = "";
  let inArgument = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quote === "'") {
      if (char === "'") {
        quote = undefined;
      } else {
        current += char;
      }
      continue;
    }
    if (char === "\\" && i + 1 < text.length && (quote === undefined || /["\\$`]/.test(text[i + 1]))) {
      current += text[++i];
      inArgument = true;
      continue;
    }
    if (quote === '"') {
      if (char === '"') {
        quote = undefined;
      } else {
        current += char;
      }
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      inArgument = true;
    } else if (/\s/.test(char)) {
      if (inArgument) {
        args.push(current);
        current = "";
        inArgument = false;
      }
    } else {
      current += char;
      inArgument = true;
    }
  }
  if (inArgument) {
    args.push(current);
  }
  return args;
}

/** The arguments as one line a shell would split back into them. */
export function joinArguments(args: readonly string[]): string {
  return args.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`)).join(" ");
}

/** `joinArguments`, cut to `max` characters with an ellipsis, for a label. */
export function shortArguments(args: readonly string[], max = 60): string {
  const line = joinArguments(args);
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/** Where the last arguments typed for each script are kept (VS Code's workspaceState). */
export interface ArgumentMemory {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

const KEY = "quickdev.scriptArguments";
// The most scripts remembered; the least recently used go first.
const KEPT_SCRIPTS = 200;

/** The arguments last used for `script` ("" when none were). */
export function lastArguments(memory: ArgumentMemory, script: string): string | undefined {
  return memory.get<Record<string, string>>(KEY)?.[script];
}

export async function rememberArguments(memory: ArgumentMemory, script: string, text: string): Promise<void> {
  const known = { ...(memory.get<Record<string, string>>(KEY) ?? {}) };
  delete known[script];
  known[script] = text;
  const kept = Object.entries(known).slice(-KEPT_SCRIPTS);
  await memory.update(KEY, Object.fromEntries(kept));
}
