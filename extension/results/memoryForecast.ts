// The memory forecast on the result page: the step's peak as a bar by category, where in the step
// it is, the devices it fits (and the batch size that would where it does not), the advice, and
// the figures per top-level module. No vscode import.
import { type Json, escapeHtml, finite, list, record, rows, table, text } from "./html";

/** result.json's categories, in the order the bar stacks them (rundir/memory.py). */
export const CATEGORIES = ["parameters", "gradients", "optimizer_state", "activations", "temporaries"] as const;

const GB = 2 ** 30;
const MB = 2 ** 20;

/** "11.2 GB" from one GB up, "180 MB", "0.4 MB" below: as the terminal and the lens write sizes (GB: 2**30 bytes). */
export function size(bytes: unknown): string {
  if (!finite(bytes)) {
    return "?";
  }
  if (bytes >= GB) {
    const gb = bytes / GB;
    return Math.abs(gb - Math.round(gb)) < 0.05 ? `${gb.toFixed(0)} GB` : `${gb.toFixed(1)} GB`;
  }
  const mb = bytes / MB;
  return mb >= 10 ? `${mb.toFixed(0)} MB` : `${mb.toFixed(1)} MB`;
}

const label = (category: string): string => category.replace(/_/g, " ");

/** A horizontal bar of the peak by category (colours from the page's style), and its legend. */
export function memoryBar(categories: Json, width = 480, height = 18): string {
  const parts = CATEGORIES.map((name) => [name, categories[name]] as const).filter(
    (part): part is readonly [(typeof CATEGORIES)[number], number] => finite(part[1]) && part[1] > 0,
  );
  const total = parts.reduce((sum, [, bytes]) => sum + bytes, 0);
  if (total <= 0) {
    return "";
  }
  let x = 0;
  const rects = parts.map(([name, bytes]) => {
    const w = (bytes / total) * width;
    const rect = `<rect class="${name}" x="${x.toFixed(1)}" y="0" width="${w.toFixed(1)}" height="${height}"><title>${escapeHtml(`${label(name)} ${size(bytes)}`)}</title></rect>`;
    x += w;
    return rect;
  });
  const described = parts.map(([name, bytes]) => `${label(name)} ${size(bytes)}`).join(", ");
  const legend = parts
    .map(([name, bytes]) => `<span class="${name}"></span>${escapeHtml(`${label(name)} ${size(bytes)}`)}`)
    .join("");
  return (
    `<svg class="memory" role="img" aria-label="${escapeHtml(`at the peak: ${described}`)}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${rects.join("")}</svg>` +
    `<p class="legend">${legend}</p>`
  );
}

function fits(forecast: Json): string {
  const body = list(forecast.fits).flatMap((value) => {
    const fit = record(value);
    const device = text(fit?.device);
    if (!fit || !device) {
      return [];
    }
    const largest = finite(fit.max_batch_size) ? String(fit.max_batch_size) : fit.fits === true ? "" : "none";
    return [[device, fit.fits === true ? "fits" : "does not fit", largest]];
  });
  return table(["device", "the step", "largest batch size that fits"], body);
}

function modules(forecast: Json): string {
  const body = list(forecast.modules).flatMap((value) => {
    const module = record(value);
    const name = text(module?.name);
    if (!module || !name) {
      return [];
    }
    return [
      [name, size(module.parameters), size(module.gradients), size(module.optimizer_state), size(module.activations)],
    ];
  });
  return table(["module", "parameters", "gradients", "optimizer state", "activations"], body);
}

/** The section for result.json's `memory_forecast`; `line`: the run summary's one line for it. */
export function memoryForecast(value: unknown, line?: string): string {
  const forecast = record(value);
  if (!forecast) {
    return "";
  }
  if (!finite(forecast.peak)) {
    const why = text(forecast.error);
    return why ? `<p>${escapeHtml(`No forecast: ${why}`)}</p>` : "";
  }
  const phase = text(forecast.peak_phase);
  const module = text(forecast.peak_module);
  const summary = rows([
    ["peak", line ?? `≈ ${size(forecast.peak)} peak`],
    ["where", phase && module ? `${phase}, in ${module}` : phase],
    ["batch size", text(forecast.batch_size)],
    ["precision", text(forecast.precision)],
    ["optimizer", text(forecast.optimizer)],
    ["reserved by the allocator", finite(forecast.reserved) ? size(forecast.reserved) : undefined],
    ["cuBLAS workspace (in the peak)", finite(forecast.workspace) ? size(forecast.workspace) : undefined],
    ["loss", text(forecast.loss)],
    ["not counted", text(forecast.not_counted)],
  ]);
  const advice = text(forecast.advice);
  return (
    memoryBar(record(forecast.categories) ?? {}) +
    `<table>${summary}</table>` +
    (advice ? `<p class="advice">${escapeHtml(advice)}</p>` : "") +
    fits(forecast) +
    modules(forecast)
  );
}
