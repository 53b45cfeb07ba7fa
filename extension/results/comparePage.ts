// Two runs side by side: their arguments, what each did and their losses (one chart, both
// lines on shared axes, and a table per step), as a static page.
// No vscode import; built from result.json as written, like resultPage.ts.
import { lossChart } from "./lossChart";
import { escapeHtml, finite, list, megabytes, page, record, scriptArguments, seconds, table, text } from "./resultPage";

function facts(data: Record<string, unknown>): (string | undefined)[] {
  const losses = list(data.losses);
  const lastLoss = losses.at(-1); // null: it went NaN or Inf (JSON has no NaN)
  return [
    scriptArguments(data) ?? "(none)",
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
    losses.length ? (finite(lastLoss) ? lastLoss.toPrecision(4) : "NaN/Inf") : undefined,
    megabytes(data.peak_rss_mb),
  ];
}

const FACTS = [
  "arguments",
  "status",
  "stop reason",
  "duration",
  "optimizer steps",
  "batches",
  "last loss",
  "peak memory",
];

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
  const chart = lossChart([
    { name: name(a), values: lossesA },
    { name: name(b), values: lossesB },
  ]);
  const scripts = [text(a.script), text(b.script)].filter(Boolean).map((s) => escapeHtml(s as string));
  return page(
    `Compare ${name(a)} and ${name(b)}`,
    `<p>${[...new Set(scripts)].join(" · ")}</p>${summary}${chart ? `<h2>Loss</h2>${chart}` : ""}${perStep ? `<h2>Loss per step</h2>${perStep}` : ""}`,
    nonce,
  );
}
