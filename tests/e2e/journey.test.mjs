// The user journey of Torch Quickdev in a real VS Code (code-server), step by step, as a person
// would go through it. Steps run in order and share one workbench; each saves a screenshot.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { artifactsDir, copyFixtureWorkspace, freshArtifacts } from './lib/artifacts.mjs';
import { repoRoot, startCodeServer } from './lib/codeServer.mjs';
import { launchBrowser, Workbench } from './lib/workbench.mjs';

const python = path.join(repoRoot, '.venv', 'bin', 'python');

describe('a trusted multi-root workspace', () => {
  let server;
  let browser;
  let workbench;
  let workspace;

  /** A test whose failure also keeps a screenshot and code-server's logs. */
  function step(name, fn) {
    test(name, async () => {
      try {
        await fn();
      } catch (error) {
        await workbench?.screenshot(`FAILED-${slug(name)}`).catch(() => {});
        await server?.saveLogs(path.join(artifactsDir, 'logs')).catch(() => {});
        throw error;
      }
    });
  }

  before(async () => {
    await freshArtifacts();
    assert.ok(existsSync(python), `no interpreter at ${python}; run 'make venv' first`);
    server = await startCodeServer({
      logDir: path.join(artifactsDir, 'logs'),
      settings: {
        // The fixture folders are trusted; the untrusted case has its own suite.
        'security.workspace.trust.enabled': false,
        'quickdev.python': python,
      },
      vsix: process.env.QUICKDEV_VSIX,
    });
    workspace = await copyFixtureWorkspace(path.join(server.baseDir, 'workspace'));
    browser = await launchBrowser();
    workbench = await Workbench.open(
      browser,
      server.urlFor(workspace.workspaceFile),
      path.join(artifactsDir, 'screenshots'),
    );
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await server?.removeDirs();
  });

  step('the workbench opens the multi-root workspace with both folders in the Explorer', async () => {
    const roots = await workbench.explorerRoots();
    assert.deepEqual(roots.sort(), ['text', 'vision']);
    await workbench.screenshot('workspace-open');
  });

  step('the command palette runs commands: the user settings point Quickdev at the venv', async () => {
    await workbench.runCommand('Preferences: Open User Settings (JSON)');
    await workbench.editorShows('"quickdev.python"');
    await workbench.editorShows(python);
    await workbench.screenshot('user-settings');
  });

  step('Quick Open opens a training script in the editor', async () => {
    await workbench.openFile('vision/train.py');
    await workbench.editorShows('class SmallCNN(nn.Module):');
    await workbench.screenshot('train-script-open');
  });
});

function slug(text) {
  return text.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '').slice(0, 60);
}
