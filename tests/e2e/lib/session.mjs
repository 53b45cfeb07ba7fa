// One suite's VS Code: a fresh code-server with the built extension installed, a copy of the
// fixture workspace, and a browser page on it. Registers the node:test hooks that start and
// stop it, and `step`, a test that keeps a screenshot and code-server's logs when it fails.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { artifactsDir, copyFixtureWorkspace } from './artifacts.mjs';
import { repoRoot, startCodeServer } from './codeServer.mjs';
import { launchBrowser, Workbench } from './workbench.mjs';

export const python = path.join(repoRoot, '.venv', 'bin', 'python');

export function useSession(name, settings) {
  const session = {};

  session.step = (title, fn) =>
    test(title, async () => {
      try {
        await fn();
      } catch (error) {
        await session.workbench?.screenshot(`FAILED-${slug(title)}`).catch(() => {});
        const logs = path.join(artifactsDir, 'logs', name);
        await session.server?.saveLogs(logs).catch(() => {});
        await session.workspace?.saveRuns(logs).catch(() => {});
        // One failed step must not fail the ones after it.
        await session.workbench?.recover().catch(() => {});
        throw error;
      }
    });

  before(async () => {
    assert.ok(existsSync(python), `no interpreter at ${python}; run 'make venv' first`);
    const vsix = process.env.QUICKDEV_VSIX;
    assert.ok(
      vsix && existsSync(vsix),
      'QUICKDEV_VSIX must name the built extension; run `make e2e`',
    );
    session.server = await startCodeServer({
      name,
      logDir: path.join(artifactsDir, 'logs', name),
      settings: { 'quickdev.python': python, ...settings },
      vsix,
    });
    session.workspace = await copyFixtureWorkspace(path.join(session.server.baseDir, 'workspace'));
    session.browser = await launchBrowser();
    session.workbench = await Workbench.open(
      session.browser,
      session.server.urlFor(session.workspace.workspaceFile),
      path.join(artifactsDir, 'screenshots', name),
    );
  });

  after(async () => {
    await session.browser?.close();
    await session.server?.stop();
    await session.server?.removeDirs();
  });

  return session;
}

function slug(text) {
  return text.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '').slice(0, 60);
}
