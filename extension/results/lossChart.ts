// Two or more runs' losses in one chart on shared axes, as static SVG (no script): each run a
// line in its own color (a run with one loss a dot), a legend naming them. No vscode import.
import { escapeHtml, finite } from "./resultPage";

export interface Series {
  name: string;
  values: readonly unknown[];
}

// Each run's color is a class the page's style gives one of VS Code's chart colors (the
// `.seriesN` rules of resultPage.ts's style), so the lines read in every theme; a CSP without
// inline styles allows classes.
const SERIES_CLASSES = 4;
const seriesClass = (i: number): string => `series${i % SERIES_CLASSES}`;

/** The chart, or "" when no run has a finite loss. Step i of every run is at the same x. */
export function lossChart(series: readonly Series[], width = 480, height = 160): string {
  const points = series.map((s) =>
    s.values.map((v, step) => [step, v] as const).filter((p): p is readonly [number, number] => finite(p[1])),
  );
  const all = points.flat();
  if (!all.length) {
    return "";
  }
  const low = Math.min(...all.map((p) => p[1]));
  const high = Math.max(...all.map((p) => p[1]));
  const span = high - low || 1;
  const steps = Math.max(...series.map((s) => s.values.length), 2) - 1;
  const pad = 6;
  const x = (step: number): string => (pad + (step / steps) * (width - 2 * pad)).toFixed(1);
  const y = (value: number): string => (height - pad - ((value - low) / span) * (height - 2 * pad)).toFixed(1);
  const marks = points
    .map((line, i) => {
      const color = seriesClass(i);
      const name = escapeHtml(series[i]?.name ?? "");
      if (line.length === 1) {
        const [step, value] = line[0];
        return `<circle class="${color}" cx="${x(step)}" cy="${y(value)}" r="3" fill="currentColor"><title>${name}</title></circle>`;
      }
      const coordinates = line.map(([step, value]) => `${x(step)},${y(value)}`).join(" ");
      return `<polyline class="${color}" fill="none" stroke="currentColor" stroke-width="1.5" points="${coordinates}"><title>${name}</title></polyline>`;
    })
    .join("");
  const legend = series
    .map((s, i) => `<span class="${seriesClass(i)}">■</span> ${escapeHtml(s.name)}`)
    .join(" &nbsp; ");
  const label = `loss per step of ${series.map((s) => s.name).join(" and ")}, from ${low.toPrecision(4)} to ${high.toPrecision(4)}`;
  return (
    `<svg class="chart" role="img" aria-label="${escapeHtml(label)}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `${marks}</svg><p>${legend}</p>`
  );
}
