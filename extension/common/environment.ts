// The job's environment as Python users write it: `.env` files (the Python extension's syntax)
// and a launch configuration's `env` over them. No vscode import: unit-tested under plain node.

export type Environment = Record<string, string>;

const LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$/;

/**
 * Parses a `.env` file: `NAME=value` lines, `export` allowed, `#` comments, single quotes
 * literal, double quotes with `\n` escapes, and `${NAME}` taken from lines above or `base`
 * (the process environment), as the Python extension does. Lines it cannot read are skipped.
 */
export function parseEnvFile(text: string, base: Readonly<Record<string, string | undefined>> = {}): Environment {
  const parsed: Environment = {};
  for (const line of text.split(/\r?\n/)) {
    const match = LINE.exec(line);
    if (!match || line.trimStart().startsWith("#")) {
      continue;
    }
    const [, name, raw] = match as unknown as [string, string, string];
    parsed[name] = parseValue(raw, (variable) => parsed[variable] ?? base[variable] ?? "");
  }
  return parsed;
}

function parseValue(raw: string, lookup: (name: string) => string): string {
  const quote = raw[0];
  if ((quote === "'" || quote === '"') && raw.length >= 2 && raw.endsWith(quote)) {
    const inner = raw.slice(1, -1);
    return quote === "'" ? inner : expand(inner.replace(/\\n/g, "\n").replace(/\\"/g, '"'), lookup);
  }
  // An unquoted value ends at a comment.
  return expand(raw.replace(/\s+#.*$/, ""), lookup);
}

function expand(value: string, lookup: (name: string) => string): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_whole, name: string) => lookup(name));
}

/**
 * A configuration's `env` over the file's; `null` removes a variable the file set, as in the
 * Python Debugger. Anything else not a string is reported rather than passed on.
 */
export function mergeEnvironment(fromFile: Environment, fromConfig: unknown): { env: Environment } | { error: string } {
  if (fromConfig === undefined || fromConfig === null) {
    return { env: { ...fromFile } };
  }
  if (typeof fromConfig !== "object" || Array.isArray(fromConfig)) {
    return { error: `"env" must be an object of names to strings, got ${JSON.stringify(fromConfig)}` };
  }
  const env: Environment = { ...fromFile };
  for (const [name, value] of Object.entries(fromConfig as Record<string, unknown>)) {
    if (value === null) {
      delete env[name];
    } else if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      env[name] = String(value);
    } else {
      return { error: `"env.${name}" must be a string, got ${JSON.stringify(value)}` };
    }
  }
  return { env };
}
