// How a run reads in the Runs view and in notifications. No vscode import.
import * as path from "node:path";
import { shortArguments } from "../jobs/arguments";
import { type RunSummary, isFinished } from "../server/protocol";

/** How often a live run's progress and Runs view item are redrawn (its elapsed time moves). */
export const LIVE_TICK_MS = 1000;

/**
 * "running · train · 12.0 s · 4 batches · 2 steps · loss 0.6931". `nowMs`: the time to count a
 * live run's elapsed time to (the server reports only when something changes, so a long step
 * would otherwise freeze the clock); a finished run shows its own duration.
 */
export function describeRun(run: RunSummary, nowMs: number = Date.now()): string {
  const parts: string[] = [run.status];
  // The job reports "running" as its stage too: say it once.
  if (run.status === "running" && run.stage && run.stage !== run.status) {
    parts.push(run.stage);
  }
  const seconds = elapsedS(run, nowMs);
  if (seconds !== undefined) {
    parts.push(`${seconds.toFixed(1)} s`);
  }
  if (typeof run.batches === "number") {
    parts.push(`${run.batches} batch${run.batches === 1 ? "" : "es"}`);
  }
  if (typeof run.steps === "number" && run.steps > 0) {
    parts.push(`${run.steps} step${run.steps === 1 ? "" : "s"}`);
  }
  const losses = run.losses ?? [];
  const last = losses[losses.length - 1];
  if (typeof last === "number" || last === null) {
    parts.push(`loss ${formatLoss(last)}`);
  }
  return parts.join(" · ");
}

/** A finished run's duration; a live one's time since it started, by this clock. */
export function elapsedS(run: RunSummary, nowMs: number): number | undefined {
  const reported = typeof run.durationS === "number" ? run.durationS : undefined;
  if (isFinished(run.status)) {
    return reported;
  }
  const started = Date.parse(run.started);
  return Number.isNaN(started) ? reported : Math.max(reported ?? 0, (nowMs - started) / 1000);
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

/**
 * "train.py config/small.py --lr 0.1 (debug) 14:03:27": runs of one script told apart by their
 * arguments (cut short; the tooltip has them whole) and when they started.
 */
export function runLabel(run: RunSummary): string {
  const started = new Date(run.started);
  // hourCycle, not hour12: false, which writes the first hour after midnight as "24:06:03".
  const time = Number.isNaN(started.getTime()) ? "" : ` ${started.toLocaleTimeString([], { hourCycle: "h23" })}`;
  const args = run.args?.length ? ` ${shortArguments(run.args)}` : "";
  return `${path.basename(run.script)}${args} (${run.mode})${time}`;
}

/** The one-line message shown when a run ends. */
export function endMessage(run: RunSummary): string {
  const name = path.basename(run.script);
  const what = describeRun(run);
  if (run.status === "failed" && run.error) {
    const where = run.error.file ? ` at ${path.basename(run.error.file)}:${run.error.line ?? "?"}` : "";
    return `Quickdev: ${name} failed${where}: ${run.error.message}`;
  }
  // Quickdev's own error: what failed, then what the script itself did (the verdict's lines).
  if (run.status === "error" && run.verdict.length > 0) {
    return `Quickdev: ${name} ${run.status}: ${run.verdict.join("; ")}`;
  }
  // What the run changed (one epoch, device, files kept, the budget that stopped it), as the
  // terminal summary says it.
  const changes = (run.changes ?? []).join("; ");
  // The server's line reads "≈ 1.2 GB peak · fits 24 GB", or "no memory forecast: why".
  const forecast = run.memoryForecast;
  const memory = forecast ? ` — ${forecast.startsWith("no ") ? "" : "memory forecast "}${forecast}` : "";
  return `Quickdev: ${name} ${what}${memory}${changes ? ` — ${changes}` : ""}`;
}
