// The user journey of Torch Quickdev in a real VS Code (code-server), step by step, as a person
// would go through it. Steps run in order and share one workbench; each saves a screenshot.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { artifactsDir, copyFixtureWorkspace, freshArtifacts } from './lib/artifacts.mjs';
import { repoRoot, startCodeServer } from './lib/codeServer.mjs';
import { handWrittenPieces, readJsonc } from './lib/launchFiles.mjs';
import { eventually } from './lib/poll.mjs';
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
    assert.ok(
      process.env.QUICKDEV_VSIX && existsSync(process.env.QUICKDEV_VSIX),
      'QUICKDEV_VSIX must name the built extension; run the suite with `make e2e`',
    );
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

  step('Generate Launch Configurations fills both folders and the .code-workspace, keeping hand-written ones', async () => {
    const visionLaunch = path.join(workspace.folder('vision'), '.vscode', 'launch.json');
    const textLaunch = path.join(workspace.folder('text'), '.vscode', 'launch.json');
    const original = await readJsonc(visionLaunch);
    const originalWorkspace = await readJsonc(workspace.workspaceFile);

    await workbench.notificationAfter(() =>
      workbench.runCommand('Quickdev: Generate Launch Configurations'),
    );
    const vision = await eventually('new configurations in vision/.vscode/launch.json', async () => {
      const now = await readJsonc(visionLaunch);
      return now.value.configurations.length > original.value.configurations.length && now;
    });
    const text = await eventually('text/.vscode/launch.json', () => readJsonc(textLaunch));
    const workspaceFile = await eventually('a launch block in the .code-workspace', async () => {
      const now = await readJsonc(workspace.workspaceFile);
      return now.value.launch?.configurations?.length > 0 && now;
    });
    await workbench.screenshot('launch-configurations-generated');

    for (const piece of handWrittenPieces(original.text)) {
      assert.ok(vision.text.includes(piece), `vision/.vscode/launch.json lost:\n${piece}`);
    }
    for (const piece of ['// Two projects side by side, as people keep them.', '"files.exclude"']) {
      assert.ok(workspaceFile.text.includes(piece), `the .code-workspace lost ${piece}`);
    }
    assert.deepEqual(workspaceFile.value.folders, originalWorkspace.value.folders);

    for (const [folder, file] of [['vision', vision], ['text', text]]) {
      const added = file.value.configurations.filter((c) => !['Train (full)', 'Attach (5678)'].includes(c.name));
      const names = added.map((c) => c.name);
      assert.ok(names.includes('Python: Current File (all code)'), `${folder}: ${names}`);
      const forScript = added.filter((c) => JSON.stringify(c).includes('train.py'));
      assert.ok(forScript.length >= 1, `${folder}: no configuration runs train.py: ${names}`);
      for (const configuration of added) {
        assert.equal(configuration.justMyCode, false, `${folder}: ${configuration.name} must set justMyCode false`);
      }
    }
    const launch = workspaceFile.value.launch;
    for (const folder of ['vision', 'text']) {
      const scriptPath = `\${workspaceFolder:${folder}}/train.py`;
      const configurations = launch.configurations.filter((c) => JSON.stringify(c).includes(scriptPath));
      assert.ok(configurations.length >= 1, `the .code-workspace has nothing for ${scriptPath}`);
      for (const configuration of configurations) assert.equal(configuration.justMyCode, false);
    }
    assert.ok(launch.compounds?.length >= 1, 'the .code-workspace has no compound');

    // Running it again adds nothing; the command says so when it is done.
    const message = await workbench.notificationAfter(() =>
      workbench.runCommand('Quickdev: Generate Launch Configurations'),
    );
    await workbench.screenshot('launch-configurations-second-run');
    assert.doesNotMatch(message, /error|fail/i);
    for (const [file, before] of [[visionLaunch, vision], [textLaunch, text], [workspace.workspaceFile, workspaceFile]]) {
      assert.equal((await readJsonc(file)).text, before.text, `a second run changed ${file}`);
    }
  });
});

function slug(text) {
  return text.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '').slice(0, 60);
}
