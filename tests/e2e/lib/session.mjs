// One suite's VS Code: a fresh code-server with the built extension installed, a copy of the
// fixture workspace, and a browser page on it. Registers the node:test hooks that start and
// stop it, and `step`, a test that keeps a screenshot and code-server's logs when it fails.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { artifactsDir, copyFixtureWorkspace } from './artifacts.mjs';
import { repoRoot, startCodeServer } from './codeServer.mjs';
import { launchBrowser, Workbench } from './workbench.mjs';

export const python = path.join(repoRoot, '.venv', 'bin', 'python');

/**
 * `pythonIn`: where quickdev.python is set, the user's settings (default) or the workspace's
 * (.code-workspace), which VS Code applies only once the workspace is trusted.
 */
export function useSession(name, settings, { pythonIn = 'user' } = {}) {
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
        const runs = await session.workspace?.newestRuns().catch(() => '');
        if (runs && error instanceof Error) error.message += `\n  the newest runs:\n${runs}`;
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
      settings: pythonIn === 'user' ? { 'quickdev.python': python, ...settings } : settings,
      vsix,
    });
    session.workspace = await copyFixtureWorkspace(path.join(session.server.baseDir, 'workspace'));
    if (pythonIn === 'workspace') {
      const file = session.workspace.workspaceFile;
      const text = await readFile(file, 'utf8');
      await writeFile(file, text.replace('"settings": {', `"settings": {\n\t\t"quickdev.python": ${JSON.stringify(python)},`));
    }
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
