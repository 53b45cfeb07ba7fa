import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { resultHtml, sparkline } from "../../../extension/results/resultPage";

// A result.json of today's schema (a Python test checks the file against the job's types).
const FIXTURE = path.join(
  __dirname,
  "..",
  "..",
  "..",
  "..",
  "tests",
  "extension",
  "results",
  "fixtures",
  "result.json",
);
const RESULT = JSON.parse(readFileSync(FIXTURE, "utf8")) as Record<string, unknown>;
const CHANGES = [
  "one epoch: --epochs set to 1 (pass it explicitly to keep your value)",
  "train.py:61 evaluation loop ended after 20 forwards, 2 times (eval_forwards)",
  "stopped: train_passes (1 pass(es) over the training loader; --train-passes changes it)",
];

test("the result page shows what a person looks for, not JSON", () => {
  const page = resultHtml(RESULT, "abc", CHANGES);
  for (const shown of [
    "stopped",
    "train_passes",
    "3.3 s",
    "1.870",
    "<td>/w/train.py:80</td><td>2</td><td>2</td><td>[float32[8, 3, 32, 32], int64[8]] NaN/Inf</td>",
    "<th>batches made by hand</th><td>3</td>",
    "<td>/w/small_cnn.pt</td><td>changed: put back</td><td>/w/.quickdev/runs/r/outputs/small_cnn.pt</td>",
    "<td>/w/old.ckpt</td><td>deleted: put back</td><td>—</td>",
    "<td>/w/logs/big.log</td><td>appended to: cut back to its length</td><td>/w/.quickdev/runs/r/outputs/logs/big.log</td>",
    "<td>Tensor.to</td><td>45</td>",
    "512 MB",
  ]) {
    assert.ok(page.includes(shown), `the page lacks ${shown}`);
  }
  // What the job changed comes first, in the terminal's words.
  assert.ok(page.indexOf("What Quickdev changed") < page.indexOf("Loaders"));
  for (const line of CHANGES) {
    assert.ok(page.includes(`<li>${line}</li>`), line);
  }
  // Each loop a budget ended is one line, then the phases that ran, before the details.
  assert.ok(page.includes("<td>training steps</td><td>2</td>"));
  assert.ok(page.includes("<td>evaluation forwards during training</td><td>40</td>"));
  assert.ok(page.includes("<td>files saved</td><td>2</td>"));
  assert.ok(page.indexOf("What Quickdev changed") < page.indexOf("Phases that ran"));
  assert.ok(page.indexOf("Phases that ran") < page.indexOf("Loaders"));
  // A loader that was made and never iterated is not listed.
  assert.ok(!page.includes("/w/train.py:82"));
  assert.match(page, /<svg class="sparkline"[^>]*aria-label="loss from 2\.310 to 1\.870 over 3 steps"/);
  assert.ok(!page.includes('"optimizer_steps"'), "raw JSON on the page");
});

test("the memory forecast shows as a bar by category, where it peaks, the devices and the modules", () => {
  const page = resultHtml(RESULT, "abc", CHANGES, "≈ 11.2 GB peak · fits 24 GB");
  assert.ok(page.indexOf("GPU memory forecast") < page.indexOf("Loss"));
  assert.ok(page.includes("<th>peak</th><td>≈ 11.2 GB peak · fits 24 GB</td>"));
  assert.ok(page.includes("<th>where</th><td>backward, in transformer.h.11.mlp</td>"));
  // The bar: one rectangle per category, as wide as its share, labelled for a screen reader.
  const bar = /<svg class="memory" role="img" aria-label="([^"]*)"[^>]*>(.*?)<\/svg>/.exec(page);
  assert.ok(bar, "no memory bar");
  assert.equal(
    bar[1],
    "at the peak: parameters 474 MB, gradients 474 MB, optimizer state 948 MB, activations 8.8 GB, temporaries 580 MB",
  );
  const widths = [...bar[2].matchAll(/<rect class="(\w+)" x="[\d.]+" y="0" width="([\d.]+)"/g)].map(
    (m) => [m[1], Number(m[2])] as const,
  );
  assert.deepEqual(
    widths.map(([name]) => name),
    ["parameters", "gradients", "optimizer_state", "activations", "temporaries"],
  );
  const activations = widths.find(([name]) => name === "activations")?.[1] ?? 0;
  assert.ok(activations > 0.7 * 480 && activations < 0.85 * 480, String(activations));
  for (const shown of [
    "<td>24 GB</td><td>fits</td><td></td>",
    "<td>8 GB</td><td>does not fit</td><td>7</td>",
    "<td>transformer.h.0</td><td>27 MB</td><td>27 MB</td><td>54 MB</td><td>720 MB</td>",
    "Batch size 7 fits 8 GB; activations are 83% of the peak",
  ]) {
    assert.ok(page.includes(shown), `the page lacks ${shown}`);
  }
  // No forecast: the reason, in one line; an odd shape renders nothing of it.
  const none = resultHtml(
    { ...RESULT, memory_forecast: { peak: null, error: "no training step of the model ran" } },
    "n",
  );
  assert.ok(none.includes("No forecast: no training step of the model ran"));
  for (const odd of [7, [1], { peak: "big" }, { peak: 5, categories: [1], fits: "x", modules: [null, 3] }]) {
    assert.match(resultHtml({ ...RESULT, memory_forecast: odd }, "n"), /<h1>Run /);
  }
});

// A NaN hunt's result, as the job wrote it for a division by a zero std (its NaN loss left out).
const HUNT = JSON.parse(readFileSync(path.join(path.dirname(FIXTURE), "result_nonfinite.json"), "utf8")) as Record<
  string,
  unknown
>;

test("a NaN hunt's page names the operation, its line, module, step and the tensors it read", () => {
  const page = resultHtml(HUNT, "abc");
  assert.ok(page.indexOf("First NaN/Inf") < page.indexOf("Loaders"), "the finding comes before the details");
  for (const shown of [
    "<th>operation</th><td>torch.Tensor.div</td>",
    "<th>line</th><td>/w/train.py:13 in forward</td>",
    "<th>module</th><td>norm</td>",
    "<th>step</th><td>8 (forward)</td>",
    "<th>reached</th><td>the loss at step 8</td>",
    // The std it divided by: six zeros, nothing else.
    "<td>input</td><td>float32[1, 6]</td><td>0.000</td><td>0.000</td><td>0.000</td><td>6</td><td>0</td><td>0</td><td>0</td>",
    "<td>output</td><td>float32[32, 6]</td><td>—</td><td>—</td><td>—</td><td>0</td><td>192</td>",
  ]) {
    assert.ok(page.includes(shown), `the page lacks ${shown}`);
  }
  assert.ok(!resultHtml(RESULT, "abc").includes("First NaN/Inf"), "a run without a hunt has no such section");
});

test("the page runs no script: its CSP allows only its own style", () => {
  const page = resultHtml(RESULT, "n0nce");
  assert.match(page, /content="default-src 'none'; style-src 'nonce-n0nce'"/);
  assert.ok(!/<script/i.test(page));
});

test("values from the file are escaped, and a file of any shape still renders", () => {
  const page = resultHtml(
    {
      ...RESULT,
      script: '<img src=x onerror="alert(1)">',
      error: { type: "ValueError", message: "<b>bad</b>", file: "/w/t.py", line: 3 },
    },
    "n",
  );
  assert.ok(!page.includes("<img"));
  assert.ok(page.includes("ValueError: &lt;b&gt;bad&lt;/b&gt;"));
  assert.ok(page.includes("at /w/t.py:3"));
  for (const odd of [
    null,
    [1, 2],
    "text",
    {
      losses: "many",
      loaders: [3, null],
      outputs: [null, 4],
      device: { remaps: [1] },
      phases: [1],
    },
    { phases: { training_steps: "2" } },
  ]) {
    assert.match(resultHtml(odd, "n"), /<h1>Run /);
  }
  assert.ok(resultHtml(RESULT, "n", ["<b>x</b>"]).includes("<li>&lt;b&gt;x&lt;/b&gt;</li>"));
});

test("the sparkline needs two finite losses and scales them into its box", () => {
  assert.equal(sparkline([]), "");
  assert.equal(sparkline([1.0, Number.NaN]), "");
  const svg = sparkline([4, 2, 0], 100, 20);
  assert.match(svg, /points="0\.0,2\.0 50\.0,10\.0 100\.0,18\.0"/);
});

test("two runs compare side by side, loss per step with the difference", async () => {
  const { compareHtml } = await import("../../../extension/results/comparePage");
  const other = { ...RESULT, id: "second", status: "passed", losses: [2.31, 1.5], optimizer_steps: 4 };
  const page = compareHtml(RESULT, other, "n");
  assert.ok(page.includes("<th>20260102-030405-train-ab12</th><th>second</th>"));
  assert.ok(page.includes("<td>status</td><td>stopped</td><td>passed</td>"));
  assert.ok(page.includes("<td>2</td><td>2.050</td><td>1.500</td><td>-0.550</td>"));
  assert.ok(page.includes("<td>3</td><td>1.870</td><td></td><td></td>"));
  // One chart, both runs' lines on shared axes.
  assert.equal((page.match(/<svg class="chart"/g) ?? []).length, 1);
  assert.equal((page.match(/<polyline class="series\d"/g) ?? []).length, 2);
  assert.ok(!/<script/i.test(page));
});

test("runs that differ only in their arguments are told apart on the compare page", async () => {
  const { compareHtml } = await import("../../../extension/results/comparePage");
  const first = { ...RESULT, id: "a", argv: ["/w/train.py", "config/small.py"] };
  const second = { ...RESULT, id: "b", argv: ["/w/train.py", "config/small.py", "--dtype=float32"], losses: [2.5] };
  const page = compareHtml(first, second, "n");
  assert.ok(page.includes("<td>arguments</td><td>config/small.py</td><td>config/small.py --dtype=float32</td>"), page);
  // A run with a single loss is a dot beside the other's line, not left out.
  assert.equal((page.match(/<polyline class="series0"/g) ?? []).length, 1);
  assert.equal((page.match(/<circle class="series1"/g) ?? []).length, 1);
  assert.ok(resultHtml(second, "n").includes("<th>arguments</th><td>config/small.py --dtype=float32</td>"));
});

test("why a run is not a clean pass is shown first, escaped", () => {
  const verdict = ["the training loss became nan at step 3; run with --find-nonfinite <to find it>"];
  const page = resultHtml(RESULT, "abc", CHANGES, undefined, verdict);
  const why = page.indexOf('<ul class="verdict"><li>the training loss became nan at step 3');
  assert.ok(why > 0, "the verdict's line is on the page");
  assert.ok(why < page.indexOf("What Quickdev changed"), "before the rest");
  assert.ok(page.includes("&lt;to find it&gt;"));
  assert.ok(!resultHtml(RESULT, "abc", CHANGES).includes('class="verdict"'), "none for a clean run");
});
