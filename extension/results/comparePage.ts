// Two runs side by side: what each did and their scalars (loss per step), as a static page.
// No vscode import; built from result.json as written, like resultPage.ts.
import { escapeHtml, finite, list, megabytes, page, record, seconds, sparkline, table, text } from "./resultPage";

function facts(data: Record<string, unknown>): (string | undefined)[] {
  const losses = list(data.losses).filter(finite);
  return [
    text(data.status),
    text(data.stop_reason),
    seconds(data.duration_s),
    text(data.optimizer_steps),
    // Hand-made batches (training steps without a DataLoader) count, as in the Runs view.
    String(
      list(data.loaders).reduce<number>(
        (sum, l) => sum + (finite(record(l)?.batches) ? (record(l)?.batches as number) : 0),
        0,
      ) + (finite(data.loop_batches) ? data.loop_batches : 0),
    ),
    losses.length ? losses[losses.length - 1]?.toPrecision(4) : undefined,
    megabytes(data.peak_rss_mb),
  ];
}

const FACTS = ["status", "stop reason", "duration", "optimizer steps", "batches", "last loss", "peak memory"];

export function compareHtml(first: unknown, second: unknown, nonce: string): string {
  const a = record(first) ?? {};
  const b = record(second) ?? {};
  const name = (data: Record<string, unknown>): string => text(data.id) ?? "?";
  const [factsA, factsB] = [facts(a), facts(b)];
  const summary = table(
    ["", name(a), name(b)],
    FACTS.map((fact, i) => [fact, factsA[i] ?? "", factsB[i] ?? ""]),
  );
  const lossesA = list(a.losses);
  const lossesB = list(b.losses);
  const steps = Math.max(lossesA.length, lossesB.length);
  const cell = (value: unknown): string => (finite(value) ? value.toPrecision(4) : "");
  const perStep = table(
    ["step", `loss ${name(a)}`, `loss ${name(b)}`, "difference"],
    Array.from({ length: steps }, (_, i) => {
      const [x, y] = [lossesA[i], lossesB[i]];
      return [String(i + 1), cell(x), cell(y), finite(x) && finite(y) ? (y - x).toPrecision(3) : ""];
    }),
  );
  const lines = [lossesA, lossesB]
    .map((losses, i) => {
      const line = sparkline(losses);
      return line ? `<p>${escapeHtml(name(i === 0 ? a : b))}<br>${line}</p>` : "";
    })
    .join("");
  const scripts = [text(a.script), text(b.script)].filter(Boolean).map((s) => escapeHtml(s as string));
  return page(
    `Compare ${name(a)} and ${name(b)}`,
    `<p>${[...new Set(scripts)].join(" · ")}</p>${summary}${lines ? `<h2>Loss</h2>${lines}` : ""}${perStep ? `<h2>Loss per step</h2>${perStep}` : ""}`,
    nonce,
  );
}
