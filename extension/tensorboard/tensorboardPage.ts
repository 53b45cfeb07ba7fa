// The webview page that embeds TensorBoard. No vscode import.

export interface SourceLink {
  filename: string;
  /** 0-based, as torch-tb-profiler posts it. */
  line: number;
}

/** Accepts only the shape the profiler plugin posts; anything else is ignored. */
export function parseSourceLink(message: unknown): SourceLink | undefined {
  if (typeof message !== "object" || message === null) {
    return undefined;
  }
  const { type, filename, line } = message as Record<string, unknown>;
  if (type !== "openSource" || typeof filename !== "string" || filename === "") {
    return undefined;
  }
  if (typeof line !== "number" || !Number.isInteger(line) || line < 0) {
    return undefined;
  }
  return { filename, line };
}

/** Quickdev's runs are profiles: open TensorBoard on the PyTorch Profiler plugin's tab. */
export function withProfilerPlugin(url: string): string {
  return url.includes("#") ? url : `${url}#pytorch_profiler`;
}

/**
 * The frame's sandbox: TensorBoard needs its scripts and its own origin (its API calls,
 * the Trace view's inner frame); it gets no popups, top navigation, forms or downloads.
 */
export const FRAME_SANDBOX = "allow-scripts allow-same-origin";

export function originOf(url: string): string {
  return new URL(url).origin;
}

/**
 * The page: a strict CSP that allows only the TensorBoard origin in a frame and our own
 * nonce'd script; the script forwards `{filename, line}` from that origin and nothing else.
 */
export function tensorBoardHtml(frameUrl: string, nonce: string): string {
  const origin = originOf(frameUrl);
  const csp = [
    "default-src 'none'",
    `frame-src ${origin}`,
    `style-src 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
  const escape = (value: string): string => value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escape(csp)}">
<style nonce="${nonce}">
html, body { margin: 0; padding: 0; width: 100%; height: 100%; overflow: hidden; }
iframe { border: 0; width: 100%; height: 100%; background: white; }
</style>
</head>
<body>
<iframe id="tensorboard" title="TensorBoard" sandbox="${FRAME_SANDBOX}" src="${escape(frameUrl)}"></iframe>
<script nonce="${nonce}">
(function () {
  const vscode = acquireVsCodeApi();
  const embeddedOrigin = ${JSON.stringify(origin)};
  const frameUrl = ${JSON.stringify(frameUrl)};
  window.addEventListener("message", function (event) {
    const data = event.data;
    // Refresh comes from the extension; reloading is harmless whoever asks.
    if (data && data.type === "refresh") {
      const old = document.getElementById("tensorboard");
      const fresh = document.createElement("iframe");
      fresh.id = "tensorboard";
      fresh.title = "TensorBoard";
      fresh.setAttribute("sandbox", ${JSON.stringify(FRAME_SANDBOX)});
      fresh.src = frameUrl;
      old.replaceWith(fresh);
      return;
    }
    if (event.origin !== embeddedOrigin) {
      return;
    }
    // torch-tb-profiler posts {filename, line} to window.parent.parent when a frame is clicked.
    if (data && typeof data.filename === "string" && Number.isInteger(data.line)) {
      vscode.postMessage({ type: "openSource", filename: data.filename, line: data.line });
    }
  });
})();
</script>
</body>
</html>
`;
}
