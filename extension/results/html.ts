// The pieces every results page is made of: tolerant readers of result.json values (a file of any
// shape renders), escaping, and tables. No vscode import.

export type Json = Record<string, unknown>;

export const record = (value: unknown): Json | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
export const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
export const text = (value: unknown): string | undefined =>
  typeof value === "string"
    ? value
    : typeof value === "number" || typeof value === "boolean"
      ? String(value)
      : undefined;
export const finite = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);
export const positive = (value: unknown): value is number => finite(value) && value > 0;

export function escapeHtml(value: string): string {
  return value
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

export function rows(pairs: readonly [string, string | undefined][]): string {
  return pairs
    .filter((pair): pair is [string, string] => pair[1] !== undefined && pair[1] !== "")
    .map(([name, value]) => `<tr><th>${escapeHtml(name)}</th><td>${escapeHtml(value)}</td></tr>`)
    .join("");
}

export function table(headers: readonly string[], body: readonly (readonly string[])[]): string {
  if (!body.length) {
    return "";
  }
  const head = headers.map((h) => `<th>${escapeHtml(h)}</th>`).join("");
  const lines = body.map((cells) => `<tr>${cells.map((c) => `<td>${escapeHtml(c)}</td>`).join("")}</tr>`).join("");
  return `<table class="grid"><thead><tr>${head}</tr></thead><tbody>${lines}</tbody></table>`;
}

export function section(title: string, content: string): string {
  return content ? `<h2>${escapeHtml(title)}</h2>${content}` : "";
}
