import assert from "node:assert/strict";
import { test } from "node:test";
import { runInNewContext } from "node:vm";
import { parseSourceLink, tensorBoardHtml, withProfilerPlugin } from "../../../extension/tensorboard/tensorboardPage";

test("source links: the plugin's shape is accepted, line 0 included", () => {
  assert.deepEqual(parseSourceLink({ type: "openSource", filename: "/w/train.py", line: 0 }), {
    filename: "/w/train.py",
    line: 0,
  });
  assert.deepEqual(parseSourceLink({ type: "openSource", filename: "/w/train.py", line: 41 }), {
    filename: "/w/train.py",
    line: 41,
  });
});

test("source links: anything else is ignored", () => {
  for (const bad of [
    null,
    "open",
    { type: "openSource", filename: "", line: 1 },
    { type: "openSource", filename: "/w/a.py", line: -1 },
    { type: "openSource", filename: "/w/a.py", line: 1.5 },
    { type: "openSource", filename: "/w/a.py", line: "3" },
    { type: "other", filename: "/w/a.py", line: 3 },
    { filename: "/w/a.py" },
  ]) {
    assert.equal(parseSourceLink(bad), undefined, JSON.stringify(bad));
  }
});

test("the page's CSP allows only the TensorBoard origin as a frame and only its own script", () => {
  const html = tensorBoardHtml("http://127.0.0.1:8080/proxy/6006/#pytorch_profiler", "N0NCE");
  const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1];
  assert.equal(
    csp,
    "default-src 'none'; frame-src http://127.0.0.1:8080; style-src 'nonce-N0NCE'; script-src 'nonce-N0NCE'",
  );
  assert.match(
    html,
    /<iframe id="tensorboard" title="TensorBoard" sandbox="allow-scripts allow-same-origin" src="http:\/\/127\.0\.0\.1:8080\/proxy\/6006\/#pytorch_profiler">/,
  );
  // The refreshed frame is sandboxed the same way.
  assert.match(html, /fresh\.setAttribute\("sandbox", "allow-scripts allow-same-origin"\);/);
  assert.match(html, /const embeddedOrigin = "http:\/\/127\.0\.0\.1:8080";/);
  // Every script tag carries the nonce.
  assert.equal((html.match(/<script/g) ?? []).length, (html.match(/<script nonce="N0NCE">/g) ?? []).length);
});

test("the page forwards a frame click from the embedded origin and nothing from elsewhere", () => {
  // Runs the page's own script against a minimal window to check its origin filter.
  const html = tensorBoardHtml("http://127.0.0.1:6006/", "n");
  const script = /<script nonce="n">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? "";
  const posted: unknown[] = [];
  let listener: ((event: { origin: string; data: unknown }) => void) | undefined;
  const fakeWindow = { addEventListener: (_: string, fn: typeof listener) => (listener = fn) };
  runInNewContext(script, {
    // structuredClone brings the message out of the script's context, where objects have their own prototypes.
    acquireVsCodeApi: () => ({ postMessage: (message: unknown) => posted.push(structuredClone(message)) }),
    window: fakeWindow,
    document: {},
  });
  listener?.({ origin: "http://127.0.0.1:6006", data: { filename: "/w/train.py", line: 0 } });
  listener?.({ origin: "http://evil.example", data: { filename: "/etc/passwd", line: 1 } });
  listener?.({ origin: "http://127.0.0.1:6006", data: { filename: "/w/train.py" } });
  assert.deepEqual(posted, [{ type: "openSource", filename: "/w/train.py", line: 0 }]);
});

test("TensorBoard opens on the profiler plugin unless the server named a page", () => {
  assert.equal(withProfilerPlugin("http://127.0.0.1:6006/"), "http://127.0.0.1:6006/#pytorch_profiler");
  assert.equal(withProfilerPlugin("http://127.0.0.1:6006/#scalars"), "http://127.0.0.1:6006/#scalars");
});
