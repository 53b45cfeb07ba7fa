// How a run reads in the Runs view and in notifications. No vscode import.
import * as path from "node:path";
import type { RunSummary } from "../server/protocol";

export function describeRun(run: RunSummary): string {
  const parts: string[] = [run.status];
  // The job reports "running" as its stage too: say it once.
  if (run.status === "running" && run.stage && run.stage !== run.status) {
    parts.push(run.stage);
  }
  if (typeof run.durationS === "number") {
    parts.push(`${run.durationS.toFixed(1)} s`);
  }
  if (typeof run.batches === "number") {
    parts.push(`${run.batches} batch${run.batches === 1 ? "" : "es"}`);
  }
  const losses = run.losses ?? [];
  const last = losses[losses.length - 1];
  if (typeof last === "number" || last === null) {
    parts.push(`loss ${formatLoss(last)}`);
  }
  return parts.join(" · ");
}

/** A loss as the Runs view shows it; null is a NaN or infinite one (JSON has no NaN). */
export function formatLoss(value: number | null): string {
  if (value === null) {
    return "NaN/Inf";
  }
  if (!Number.isFinite(value)) {
    return String(value);
  }
  return Math.abs(value) >= 1000 || (value !== 0 && Math.abs(value) < 0.001)
    ? value.toExponential(2)
    : value.toFixed(4);
}

/** "train.py (debug) 14:03:27": runs of one script told apart by when they started. */
export function runLabel(run: RunSummary): string {
  const started = new Date(run.started);
  const time = Number.isNaN(started.getTime()) ? "" : ` ${started.toLocaleTimeString([], { hour12: false })}`;
  return `${path.basename(run.script)} (${run.mode})${time}`;
}

/** The one-line message shown when a run ends. */
export function endMessage(run: RunSummary): string {
  const name = path.basename(run.script);
  const what = describeRun(run);
  if (run.status === "failed" && run.error) {
    const where = run.error.file ? ` at ${path.basename(run.error.file)}:${run.error.line ?? "?"}` : "";
    return `Quickdev: ${name} failed${where}: ${run.error.message}`;
  }
  // What the run changed (one epoch, device, files kept, the budget that stopped it), as the
  // terminal summary says it.
  const changes = (run.changes ?? []).join("; ");
  const memory = run.memoryForecast ? ` — memory forecast ${run.memoryForecast}` : "";
  return `Quickdev: ${name} ${what}${memory}${changes ? ` — ${changes}` : ""}`;
}
