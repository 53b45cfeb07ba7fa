import assert from "node:assert/strict";
import { test } from "node:test";
import { resultHtml, sparkline } from "../../extension/resultPage";

const RESULT = {
  schema: 1,
  id: "20260102-030405-train-ab12",
  status: "stopped",
  stop_reason: "batches",
  script: "/w/train.py",
  started: "2026-01-02T03:04:05+00:00",
  duration_s: 3.25,
  optimizer_steps: 2,
  losses: [2.31, 2.05, 1.87],
  loaders: [{ origin: "/w/train.py:80", batches: 2, batch_signature: "[float32[8, 3, 32, 32], int64[8]]", nonfinite: true }],
  redirected_outputs: [{ requested: "small_cnn.pt", written: "/w/.quickdev/runs/r/outputs/small_cnn.pt" }],
  peak_rss_mb: 512.4,
};

test("the result page shows what a person looks for, not JSON", () => {
  const page = resultHtml(RESULT, "abc");
  for (const shown of ["stopped", "batches", "3.3 s", "1.870", "/w/train.py:80", "float32[8, 3, 32, 32], int64[8]] NaN/Inf", "small_cnn.pt", "kept at", "512 MB"]) {
    assert.ok(page.includes(shown), `the page lacks ${shown}`);
  }
  assert.match(page, /<svg class="sparkline"[^>]*aria-label="loss from 2\.310 to 1\.870 over 3 steps"/);
  assert.ok(!page.includes('"optimizer_steps"'), "raw JSON on the page");
});

test("the page runs no script: its CSP allows only its own style", () => {
  const page = resultHtml(RESULT, "n0nce");
  assert.match(page, /content="default-src 'none'; style-src 'nonce-n0nce'"/);
  assert.ok(!/<script/i.test(page));
});

test("values from the file are escaped, and a file of any shape still renders", () => {
  const page = resultHtml({ ...RESULT, script: '<img src=x onerror="alert(1)">', error: { type: "ValueError", message: "<b>bad</b>", file: "/w/t.py", line: 3 } }, "n");
  assert.ok(!page.includes("<img"));
  assert.ok(page.includes("ValueError: &lt;b&gt;bad&lt;/b&gt;"));
  assert.ok(page.includes("at /w/t.py:3"));
  for (const odd of [null, [1, 2], "text", { losses: "many", loaders: [3, null], remaps: ["cuda:0 → cpu"] }]) {
    assert.match(resultHtml(odd, "n"), /<h1>Run /);
  }
  assert.ok(resultHtml({ remaps: ["cuda:0 → cpu"] }, "n").includes("cuda:0 → cpu"));
});

test("the sparkline needs two finite losses and scales them into its box", () => {
  assert.equal(sparkline([]), "");
  assert.equal(sparkline([1.0, Number.NaN]), "");
  const svg = sparkline([4, 2, 0], 100, 20);
  assert.match(svg, /points="0\.0,2\.0 50\.0,10\.0 100\.0,18\.0"/);
});

test("two runs compare side by side, loss per step with the difference", async () => {
  const { compareHtml } = await import("../../extension/comparePage");
  const other = { ...RESULT, id: "second", status: "passed", losses: [2.31, 1.5], optimizer_steps: 4 };
  const page = compareHtml(RESULT, other, "n");
  assert.ok(page.includes("<th>20260102-030405-train-ab12</th><th>second</th>"));
  assert.ok(page.includes("<td>status</td><td>stopped</td><td>passed</td>"));
  assert.ok(page.includes("<td>2</td><td>2.050</td><td>1.500</td><td>-0.550</td>"));
  assert.ok(page.includes("<td>3</td><td>1.870</td><td></td><td></td>"));
  assert.equal((page.match(/<svg class="sparkline"/g) ?? []).length, 2);
  assert.ok(!/<script/i.test(page));
});
