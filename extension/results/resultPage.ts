// A run's result as a page a person reads: status, what the job changed (each loop a budget
// ended, why it stopped), the phases that ran, loaders and their batches, steps, a loss
// sparkline, outputs kept, device remaps, duration.
// No vscode import; no script in the page: a CSP allows only our nonce'd style. The result is
// result.json as the job wrote it, of whatever shape: every field is checked before use and
// anything unexpected is left out.

import { type Json, escapeHtml, finite, list, positive, record, rows, section, table, text } from "./html";
import { memoryForecast } from "./memoryForecast";
import { joinArguments } from "../jobs/arguments";

export { escapeHtml, finite, list, positive, record, rows, table, text } from "./html";

/** A run's duration and peak memory as both pages show them; undefined when not a number. */
export const seconds = (value: unknown): string | undefined => (finite(value) ? `${value.toFixed(1)} s` : undefined);
export const megabytes = (value: unknown): string | undefined =>
  positive(value) ? `${value.toFixed(0)} MB` : undefined;

/** The script's arguments (argv after the script), as typed in a terminal; undefined: none. */
export function scriptArguments(data: Json): string | undefined {
  const args = list(data.argv)
    .slice(1)
    .filter((arg): arg is string => typeof arg === "string");
  return args.length ? joinArguments(args) : undefined;
}

/** Inline SVG of `values` (finite ones), scaled to the box; empty when fewer than two. */
export function sparkline(values: readonly unknown[], width = 320, height = 48): string {
  const points = values.filter(finite);
  if (points.length < 2) {
    return "";
  }
  const low = Math.min(...points);
  const high = Math.max(...points);
  const span = high - low || 1;
  const step = width / (points.length - 1);
  const coordinates = points
    .map(
      (value, index) =>
        `${(index * step).toFixed(1)},${(height - 2 - ((value - low) / span) * (height - 4)).toFixed(1)}`,
    )
    .join(" ");
  const label = `loss from ${points[0]?.toPrecision(4)} to ${points[points.length - 1]?.toPrecision(4)} over ${points.length} steps`;
  return (
    `<svg class="sparkline" role="img" aria-label="${escapeHtml(label)}" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}"><polyline fill="none" stroke="currentColor" stroke-width="1.5" points="${coordinates}"/></svg>`
  );
}

function loaders(result: Json): string {
  const body = list(result.loaders).flatMap((value) => {
    const loader = record(value);
    // A loader made and never iterated (a framework builds some it never uses) is noise.
    if (!loader || (!positive(loader.passes) && !positive(loader.batches))) {
      return [];
    }
    const signature = text(loader.batch_signature) ?? "";
    return [
      [
        text(loader.origin) ?? "?",
        text(loader.passes) ?? "0",
        text(loader.batches) ?? "0",
        signature + (loader.nonfinite === true ? " NaN/Inf" : ""),
      ],
    ];
  });
  return table(["created at", "passes", "batches", "batch"], body);
}

// What the file journal did with each file the job wrote outside its run directory.
const OUTCOME: Record<string, string> = {
  created: "created: removed again",
  changed: "changed: put back",
  deleted: "deleted: put back",
  appended: "appended to: cut back to its length",
  redirected: "written to the run dir instead",
};

function outputs(result: Json): string {
  const body = list(result.outputs).flatMap((value) => {
    const output = record(value);
    const requested = text(output?.requested);
    if (!output || !requested) {
      return [];
    }
    const change = text(output.change) ?? "";
    return [[requested, OUTCOME[change] ?? change, text(output.written) ?? "—"]];
  });
  return table(["the script wrote", "your file", "the job's version"], body);
}

/** Where the script asked its tensors to go and the job placed them elsewhere, by idiom. */
function remaps(result: Json): string {
  const found = record(record(result.device)?.remaps) ?? {};
  const body = Object.entries(found).flatMap(([idiom, count]) => (finite(count) ? [[idiom, String(count)]] : []));
  return table(["the script asked for", "calls"], body);
}

// result.json's `phases`: what ran of each phase of the script, in the order it runs.
const PHASES: readonly [string, string][] = [
  ["training_steps", "training steps"],
  ["evaluation_forwards", "evaluation forwards during training"],
  ["test_forwards", "evaluation forwards after training (validation, test)"],
  ["files_saved", "files saved"],
];

/** What ran of each phase: the loops a budget ended are in the changes, one line each. */
function phases(result: Json): string {
  const found = record(result.phases);
  if (!found) {
    return "";
  }
  return table(
    ["phase", "ran"],
    PHASES.flatMap(([key, label]) => (finite(found[key]) ? [[label, String(found[key])]] : [])),
  );
}

/** A tensor the NaN hunt read or wrote: shape, statistics of its finite values, counts of the rest. */
function tensorRow(role: string, value: unknown): string[] {
  const tensor = record(value);
  const shape = list(tensor?.shape).filter(finite).join(", ");
  const number = (field: unknown): string => (finite(field) ? field.toPrecision(4) : "—");
  const count = (field: unknown): string => (finite(field) ? String(field) : "0");
  return [
    role,
    `${text(tensor?.dtype) ?? "?"}[${shape}]`,
    number(tensor?.min),
    number(tensor?.max),
    number(tensor?.mean),
    count(tensor?.zeros),
    count(tensor?.nan),
    count(tensor?.posinf),
    count(tensor?.neginf),
  ];
}

/** The NaN hunt's answer: the operation that made the first NaN/Inf, where, when, and what it reached. */
function firstNonfinite(result: Json): string {
  const origin = record(result.first_nonfinite);
  if (!origin) {
    return "";
  }
  const file = text(origin.file);
  const function_ = text(origin.function);
  const sample = record(origin.sample);
  const index = sample && finite(sample.dataset_index) ? `dataset index ${sample.dataset_index}, ` : "";
  const details = rows([
    ["operation", text(origin.op)],
    ["line", file ? `${file}:${text(origin.line) ?? "?"}${function_ ? ` in ${function_}` : ""}` : undefined],
    ["module", text(origin.module)],
    ["step", text(origin.step) && `${text(origin.step)} (${text(origin.phase) ?? "?"})`],
    ["reached", text(origin.reached) && `${text(origin.reached)} at step ${text(origin.reached_step) ?? "?"}`],
    [
      "sample",
      sample ? `${index}row ${text(sample.row) ?? "?"} of the batch from ${text(sample.loader) ?? "?"}` : undefined,
    ],
  ]);
  const tensors = [
    ...list(origin.inputs).map((input) => tensorRow("input", input)),
    ...(origin.output ? [tensorRow("output", origin.output)] : []),
  ];
  const stats = table(["tensor", "shape", "min", "max", "mean", "zeros", "NaN", "inf", "-inf"], tensors);
  return `<p>${escapeHtml(text(origin.message) ?? "")}</p><table>${details}</table>${stats}`;
}

function changeList(changes: readonly string[]): string {
  return changes.length ? `<ul>${changes.map((line) => `<li>${escapeHtml(line)}</li>`).join("")}</ul>` : "";
}

/**
 * The page for one run (result.json as written); `nonce` fresh for each page. `changes`: the
 * run summary's lines on what the job changed, worded as in the terminal; `memoryLine`: its memory
 * forecast's one line; `verdict`: why the run is not a clean pass, first, as the terminal says it.
 */
export function resultHtml(
  result: unknown,
  nonce: string,
  changes: readonly string[] = [],
  memoryLine?: string,
  verdict: readonly string[] = [],
): string {
  const data = record(result) ?? {};
  const error = record(data.error);
  const losses = list(data.losses);
  // The true last loss: one that went NaN or Inf arrives as null (JSON has no NaN) and is said.
  const lastLoss = losses.length ? losses.at(-1) : undefined;
  const summary = rows([
    ["status", text(data.status) ?? "unknown"],
    ["stop reason", text(data.stop_reason)],
    ["script", text(data.script)],
    ["arguments", scriptArguments(data)],
    ["started", text(data.started)],
    ["duration", seconds(data.duration_s)],
    ["optimizer steps", text(data.optimizer_steps)],
    [
      "steps the GradScaler skipped",
      positive(data.scaler_skipped_steps)
        ? `${data.scaler_skipped_steps} (inf/NaN gradients while it finds its scale)`
        : undefined,
    ],
    ["batches made by hand", positive(data.loop_batches) ? String(data.loop_batches) : undefined],
    ["device", text(record(data.device)?.actual)],
    ["last loss", lastLoss === undefined ? undefined : finite(lastLoss) ? lastLoss.toPrecision(4) : "NaN/Inf"],
    ["peak memory", megabytes(data.peak_rss_mb)],
  ]);
  const failure = error
    ? `<p class="error">${escapeHtml(`${text(error.type) ?? "Error"}: ${text(error.message) ?? ""}`)}` +
      (text(error.file) ? `<br>at ${escapeHtml(`${text(error.file)}:${text(error.line) ?? "?"}`)}` : "") +
      "</p>"
    : "";
  const title = `Run ${text(data.id) ?? ""}`;
  const why = verdict.length
    ? `<ul class="verdict">${verdict.map((line) => `<li>${escapeHtml(line)}</li>`).join("")}</ul>`
    : "";
  const body = `<table>${summary}</table>
${why}
${failure}
${section("First NaN/Inf", firstNonfinite(data))}
${section("What Quickdev changed", changeList(changes))}
${section("Phases that ran", phases(data))}
${section("GPU memory forecast", memoryForecast(data.memory_forecast, memoryLine))}
${section("Loss", sparkline(losses))}
${section("Loaders", loaders(data))}
${section("Outputs kept", outputs(data))}
${section("Device remaps", remaps(data))}`;
  return page(title, body, nonce);
}

/** A static page under a CSP that allows only its own nonce'd style: no script runs. */
export function page(title: string, body: string, nonce: string): string {
  const csp = ["default-src 'none'", `style-src 'nonce-${nonce}'`].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1em; }
th { text-align: left; padding-right: 1.5em; font-weight: 600; }
td, th { padding-top: 2px; padding-bottom: 2px; }
table.grid { border-collapse: collapse; }
table.grid td, table.grid th { border-bottom: 1px solid var(--vscode-panel-border); padding: 3px 1em 3px 0; }
.error { color: var(--vscode-errorForeground); white-space: pre-wrap; }
.verdict { color: var(--vscode-editorWarning-foreground); font-weight: 600; }
.sparkline { color: var(--vscode-charts-blue); }
.memory rect.parameters, .legend .parameters { fill: var(--vscode-charts-blue); background: var(--vscode-charts-blue); }
.memory rect.gradients, .legend .gradients { fill: var(--vscode-charts-purple); background: var(--vscode-charts-purple); }
.memory rect.optimizer_state, .legend .optimizer_state { fill: var(--vscode-charts-orange); background: var(--vscode-charts-orange); }
.memory rect.activations, .legend .activations { fill: var(--vscode-charts-green); background: var(--vscode-charts-green); }
.memory rect.temporaries, .legend .temporaries { fill: var(--vscode-charts-yellow); background: var(--vscode-charts-yellow); }
.legend span { display: inline-block; width: 0.8em; height: 0.8em; margin: 0 0.3em 0 1em; }
.series0 { color: var(--vscode-charts-blue); }
.series1 { color: var(--vscode-charts-orange); }
.series2 { color: var(--vscode-charts-green); }
.series3 { color: var(--vscode-charts-purple); }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`;
}
