// The user journey of Torch Quickdev in a real VS Code (code-server), step by step, as a person
// would go through it. Steps run in order and share one workbench; each saves a screenshot.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { before, describe } from 'node:test';

import { freshArtifacts } from './lib/artifacts.mjs';
import { boxAround, docImage } from './lib/docImages.mjs';
import { handWrittenPieces, readJsonc } from './lib/launchFiles.mjs';
import { eventually } from './lib/poll.mjs';
import { python, useSession } from './lib/session.mjs';
import { launchSteps } from './steps/launch.mjs';
import { LONG_JOB } from './lib/longJob.mjs';
import { profiledRun } from './lib/profiledRun.mjs';
import { findFirstNanSteps } from './steps/findFirstNan.mjs';
import { memoryForecastSteps } from './steps/memoryForecast.mjs';
import { argumentsSteps } from './steps/arguments.mjs';
import { multiRootSteps } from './steps/multiRoot.mjs';
import { progressSteps } from './steps/progress.mjs';
import { runsViewSteps } from './steps/runsView.mjs';
import { shapeHintsSteps } from './steps/shapeHints.mjs';

before(freshArtifacts);

describe('a trusted multi-root workspace', () => {
  const session = useSession('trusted', { 'security.workspace.trust.enabled': false });
  const { step } = session;
  let workbench;
  let workspace;
  before(() => ({ workbench, workspace } = session));

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

  step('the status bar names the interpreter that runs the jobs, and a click opens its setting', async () => {
    const item = workbench.page.locator('.statusbar-item', { hasText: '.venv (3.' }).first();
    await item.waitFor({ timeout: 60_000 });
    const tooltip = await item.getAttribute('aria-label');
    assert.ok(tooltip.includes('.venv'), tooltip);
    await workbench.screenshot('status-bar-interpreter');
    await item.click();
    const page = workbench.page;
    await page.locator('.settings-editor').waitFor({ timeout: 15_000 });
    const setting = page.locator('.setting-item', { hasText: 'Python interpreter for the language server' }).first();
    // In a remote window (code-server is one) the User tab may not list a machine-overridable
    // setting; the Remote tab, one click away, does.
    if (!(await setting.waitFor({ timeout: 8_000 }).then(() => true, () => false))) {
      await workbench.screenshot('status-bar-interpreter-setting-user-tab');
      await page.locator('.settings-tabs-widget .action-label', { hasText: 'Remote' }).first().click();
    }
    await setting.waitFor({ timeout: 15_000 });
    await workbench.screenshot('status-bar-interpreter-setting');
    await workbench.runCommand('View: Close All Editors');
    // Nothing the extension said named an interpreter other than the one set.
    for (const text of await workbench.notificationTexts()) {
      assert.ok(!/python3\b/.test(text) || text.includes(python), `a notification named another interpreter: ${text}`);
    }
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

    await workbench.notificationAfter(
      () => workbench.runCommand('Quickdev: Generate Launch Configurations'),
      { matching: /added launch configurations/i },
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
      const handWritten = ['Train (full)', 'Attach (5678)', 'Check environment (run)'];
      const added = file.value.configurations.filter((c) => !handWritten.includes(c.name));
      const names = added.map((c) => c.name);
      // No Python Debugger here: nothing of a type this editor cannot run.
      assert.deepEqual([...new Set(added.map((c) => c.type))], ['quickdev'], `${folder}: ${names}`);
      const forScript = added.filter((c) => JSON.stringify(c).includes('train.py'));
      assert.ok(forScript.length >= 1, `${folder}: no configuration runs train.py: ${names}`);
      for (const configuration of added) {
        const where = `${folder}: ${configuration.name}`;
        assert.equal(configuration.justMyCode, false, `${where} must set justMyCode false`);
      }
    }
    // Each configuration once: a script's configurations live in its folder only; the
    // .code-workspace holds Attach and a compound of the folders' debug configurations.
    const launch = workspaceFile.value.launch;
    assert.deepEqual(launch.configurations.map((c) => c.name), ['Quickdev: Attach to Running Job']);
    const members = launch.compounds?.flatMap((compound) => compound.configurations) ?? [];
    for (const folder of ['vision', 'text']) {
      assert.ok(
        members.some((m) => m.folder === folder && m.name === 'Quickdev: debug train.py'),
        `the compound does not debug ${folder}'s train.py: ${JSON.stringify(members)}`,
      );
    }
    const offered = await workbench.launchConfigurationsOffered();
    await workbench.screenshot('launch-configurations-dropdown');
    const twice = offered.filter((label, i) => offered.indexOf(label) !== i);
    assert.deepEqual(twice, [], `the Run and Debug dropdown lists these twice: ${twice}`);
    // Ours in it: each folder's generated ones (named with their folder), Attach, the compound.
    const generatedLabels = [['vision', vision], ['text', text]].flatMap(([folder, file]) =>
      file.value.configurations
        .filter((c) => c.name.startsWith('Quickdev: '))
        .map((c) => `${c.name} (${folder})`),
    );
    const ours = offered.filter((label) => label.startsWith('Quickdev: '));
    assert.deepEqual(
      [...ours].sort(),
      // The .code-workspace's own, as the dropdown names them.
      [...generatedLabels, 'Quickdev: Attach to Running Job (workspace)', 'Quickdev: debug all entry scripts (workspace)'].sort(),
    );

    // Running it again adds nothing; the command says so when it is done.
    await workbench.notificationAfter(
      () => workbench.runCommand('Quickdev: Generate Launch Configurations'),
      { matching: /nothing to add/i },
    );
    await workbench.screenshot('launch-configurations-second-run');
    const generated = [
      [visionLaunch, vision],
      [textLaunch, text],
      [workspace.workspaceFile, workspaceFile],
    ];
    for (const [file, first] of generated) {
      assert.equal((await readJsonc(file)).text, first.text, `a second run changed ${file}`);
    }
  });

  step('code lenses show above the entry point and the training step', async () => {
    await workbench.openFile('vision/train.py');
    await workbench.goToLine(97);
    const entry = await eventually('lenses above the main guard', async () => {
      const lenses = await workbench.lensesAbove('if __name__ == "__main__":');
      const titles = lenses.map((lens) => lens.title);
      return titles.length >= 3 && titles;
    }, { timeout: 60_000 });
    for (const title of ['Quick-dev run', 'Debug', 'Profile']) {
      assert.ok(entry.includes(title), `no "${title}" lens among ${entry}`);
    }
    await workbench.screenshot('lenses-entry-point');
    const editor = workbench.activeEditor();
    const lines = await boxAround(
      editor.locator('.view-line', { hasText: 'for epoch in range(args.epochs):' }).first(),
      editor.locator('.view-line', { hasText: /^\s*main\(\)\s*$/ }).first(),
    );
    const left = (await editor.boundingBox()).x;
    await docImage(workbench.page, 'code-lenses', { ...lines, x: left, width: 880 });
    await workbench.goToLine(43);
    await eventually('the "Debug this step" lens above train_step', async () =>
      (await workbench.lensesAbove('def train_step(')).some((l) => l.title === 'Debug this step'),
    );
    await workbench.screenshot('lenses-training-step');
  });

  step('Debug this step stops in the step, steps into torch.nn, shows a tensor shape, and the run passes', async () => {
    await workbench.clickLens('def train_step(', 'Debug this step');
    // The first statement of the step's body, in the fixture's train.py.
    const inStep = (f) => f.name === 'train_step' && f.file === 'train.py';
    let frame = await workbench.pausedAt('train_step', inStep);
    assert.equal(frame.line, 49);
    await workbench.screenshot('debug-stopped-in-step');

    frame = await workbench.step('Step Over', frame);
    assert.equal(frame.line, 50, 'after `images, labels = batch`');
    const shape = await workbench.variableChild('images', 'shape');
    assert.match(shape, /^torch\.Size\(\[\d+, 3, 32, 32\]\)$/);
    await workbench.screenshot('debug-tensor-shape');

    frame = await workbench.step('Step Over', frame);
    assert.equal(frame.line, 51, 'at `logits = model(images)`');
    // One Step Into: in the model's forward, torch.nn.Module's dispatch (and Quickdev's hooks
    // on the model) stepped through and left out of the Call Stack.
    frame = await workbench.step('Step Into', frame);
    assert.equal(frame.name, 'forward', `one Step Into on model(images) stopped in ${frame.label}`);
    assert.equal(frame.file, 'train.py');
    const stack = (await workbench.callStackRows()).map((row) => row.label);
    assert.ok(!stack.some((label) => /_call_impl|quickdev|module\.py/.test(label)), stack.join('\n'));
    await workbench.screenshot('debug-step-into-forward');
    // Into torch.nn as a person does: Step Into the calls that lead to a module's forward
    // (model(...), torch's _call_impl/inner/forward_call), Step Over everything else, until the
    // debugger stands in a torch.nn module's own forward. Only possible with justMyCode off.
    let where = '';
    for (let actions = 0; actions < 150; actions += 1) {
      where = await workbench.editorOnFrame(frame);
      if (frame.name === 'forward' && /site-packages\/torch\/nn\/modules\//.test(where)) break;
      // Breadcrumbs show workspace files relative to their folder, others from the root.
      const absolute = existsSync(`/${where}`) ? `/${where}` : path.join(workspace.root, where);
      const text = await lineOf(absolute, frame.line);
      const leadsToForward = /\bmodel\(|self\.features\(|_call_impl\(|\binner\(\)|forward_call\(/;
      frame = await workbench.step(leadsToForward.test(text) ? 'Step Into' : 'Step Over', frame);
    }
    assert.equal(frame.name, 'forward', `stepping in ended at ${frame.label} in ${where}`);
    assert.match(where, /site-packages\/torch\/nn\/modules\//);
    await workbench.screenshot('debug-in-torch-nn-forward');

    await workbench.debugAction('Continue');
    await workbench.page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 90_000 });
    await workbench.showRuns();
    await workbench.runsRow('train.py (debug)', 'passed').waitFor({ timeout: 30_000 });
    await workbench.screenshot('runs-view-debug-passed');
  });

  launchSteps(session);

  step('Profile runs with progress, opens TensorBoard on the run, and a source link opens the line', async () => {
    const page = workbench.page;
    await workbench.openFile('vision/train.py');
    await workbench.goToLine(97);
    const shown = await workbench.notificationTexts();
    await workbench.clickLens('if __name__ == "__main__":', 'Profile');
    await workbench.newNotification(shown, { matching: /profiling train\.py/i });
    await workbench.screenshot('profile-progress');

    const tab = page.locator('.tabs-container .tab', { hasText: 'TensorBoard' });
    await tab.waitFor({ timeout: 120_000 });
    const runId = await eventually('a profiled run on disk', () =>
      profiledRun(path.join(workspace.folder('vision'), '.quickdev', 'runs')),
    );
    assert.match(await tab.innerText(), new RegExp(runId));
    // TensorBoard runs inside the webview; the profiler plugin is a frame inside TensorBoard.
    const plugin = await eventually('the PyTorch Profiler plugin in the panel', async () => {
      for (const frame of page.frames()) {
        if (/\/data\/plugin\/pytorch_profiler\//.test(frame.url())) {
          if (await frame.getByText('Views', { exact: true }).count()) return frame;
        }
      }
      return undefined;
    }, { timeout: 60_000 });
    await plugin.getByText(runId, { exact: true }).waitFor({ timeout: 30_000 });
    await workbench.screenshot('tensorboard-profiler-plugin');
    const panel = await boxAround(page.locator('.part.editor'));
    // The run, the view and the execution summary's table; the chart beside it would not fit.
    await docImage(page, 'tensorboard-profiler', { ...panel, width: 936, height: Math.min(panel.height, 520) });

    await plugin.getByRole('button', { name: 'Overview' }).click();
    await plugin.getByRole('option', { name: 'Operator' }).click();
    await plugin.getByText('Operator View').waitFor({ timeout: 30_000 });
    await plugin.getByText('View CallStack').first().click();
    await plugin.getByText('View call frames').first().click();
    const link = plugin.locator('button', { hasText: /train\.py\(\d+\)/ }).first();
    const linkText = await link.innerText();
    await workbench.screenshot('tensorboard-operator-call-frames');
    const line = Number(/train\.py\((\d+)\)/.exec(linkText)[1]);

    await link.click();
    await workbench.fileOpenedAt('vision/train.py', (where) => where.endsWith('vision/train.py'), line);
    await workbench.screenshot('source-link-opened');
  });

  multiRootSteps(session);
  argumentsSteps(session);
  progressSteps(session);

  step('a shape error: its traceback in the run\'s Output channel, a diagnostic in Problems at the failing line, and the fix clears it', async () => {
    const script = path.join(workspace.folder('vision'), 'train.py');
    const good = await readFile(script, 'utf8');
    const layer = 'self.classifier = nn.Linear(16 * 8 * 8, num_classes)';
    assert.ok(good.includes(layer));
    // The classifier no longer fits the features: the forward pass fails in
    // `self.classifier(flat)`.
    const broken = 'self.classifier = nn.Linear(16 * 7 * 7, num_classes)';
    await writeFile(script, good.replace(layer, broken));
    await workbench.openFile('vision/train.py');
    await workbench.goToLine(35);
    await workbench.editorShows('nn.Linear(16 * 7 * 7, num_classes)');

    await workbench.goToLine(97);
    await workbench.clickLens('if __name__ == "__main__":', 'Quick-dev run');
    await workbench.showRuns();
    await workbench.runsRow('train.py (run)', 'failed').waitFor({ timeout: 90_000 });
    // The traceback is in the run's output channel, where people look, as python prints it.
    // Its end shows: the user's failing frame and the error's line (the first line, "Traceback
    // (most recent call last):", has scrolled up by then).
    const outputLines = workbench.page.locator('.part.panel .monaco-editor .view-line');
    await outputLines.filter({ hasText: 'train.py", line 40, in forward' }).first().waitFor({ timeout: 30_000 });
    await outputLines.filter({ hasText: 'RuntimeError: mat1 and mat2 shapes' }).first().waitFor({ timeout: 30_000 });
    await workbench.screenshot('output-channel-traceback');
    await workbench.showProblems();
    const problem = workbench.problemRows().filter({ hasText: 'Ln 40' });
    await problem.first().waitFor({ timeout: 30_000 });
    assert.match(await problem.first().innerText(), /shape|mat1|size/i);
    await workbench.screenshot('problems-shape-error');

    await writeFile(script, good);
    await workbench.goToLine(35);
    await workbench.editorShows(layer);
    await workbench.goToLine(97);
    const before = await workbench.notificationTexts();
    await workbench.clickLens('if __name__ == "__main__":', 'Quick-dev run');
    await workbench.runsRow('train.py (run)', 'passed').waitFor({ timeout: 90_000 });
    // The message at the end says what the job changed, as the terminal's summary does.
    const ended = await workbench.newNotification(before, { matching: /train\.py passed/ });
    assert.match(ended, /one epoch: --epochs set to 1/);
    await workbench.showProblems();
    await eventually(
      'the Problems view to clear',
      async () => (await workbench.problemRows().count()) === 0,
    );
    await workbench.screenshot('problems-cleared');
  });

  shapeHintsSteps(session);

  memoryForecastSteps(session);

  findFirstNanSteps(session);

  step('Attach to Running Job: a long job started in a terminal is debugged, detached from and debugged again', async () => {
    const page = workbench.page;
    const folder = workspace.folder('vision');
    const script = path.join(folder, 'long_job.py');
    const stop = path.join(folder, 'stop-long-job');
    await writeFile(script, LONG_JOB);
    // As a person starts a full training run from a terminal: no quick-dev limits.
    const job = spawn(python, ['-m', 'quickdev', 'run', '--no-limits', '--run-id', 'e2e-long-job', script, '--', stop], {
      cwd: folder,
      stdio: 'ignore',
    });
    try {
      await eventually('the job accepting a debugger', () =>
        existsSync(path.join(folder, '.quickdev', 'runs', 'e2e-long-job', 'attach.json')),
      { timeout: 120_000 });

      const steps = [];
      for (const attempt of ['first', 'second']) {
        await workbench.runCommand('Quickdev: Attach to Running Job');
        const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'e2e-long-job' }).first();
        await row.waitFor({ timeout: 30_000 });
        if (attempt === 'first') await workbench.screenshot('attach-picker');
        await row.click();
        // VS Code opens the debug view by itself only for the window's first session.
        await workbench.runCommand('View: Show Run and Debug');
        // Attached while it runs: Pause stops it wherever its loop is. A pause sent while the
        // session is still being set up can go unanswered, so it is sent again until it holds.
        // Paused, the Call Stack shows frames (or a paused thread, where there are several).
        const threadRow = '.debug-call-stack .monaco-list-row[aria-level="1"]';
        const paused = page
          .locator(threadRow, { hasText: /paused/i })
          .or(page.locator('.debug-call-stack .monaco-list-row[aria-label^="Stack Frame "]'))
          .first();
        await eventually('the job paused', async () => {
          if (await paused.isVisible()) return true;
          await workbench.debugAction('Pause', { timeout: 1_000 }).catch(() => undefined);
          return paused.waitFor({ timeout: 3_000 }).then(() => true, () => false);
        }, { timeout: 90_000 });
        // Quickdev's sampler thread is hidden from the debugger: the job's one thread is the
        // loop's, and VS Code shows its frames without a thread row to unfold.
        assert.equal(await page.locator(threadRow, { hasText: /quickdev/i }).count(), 0);
        const mainThread = page.locator(threadRow, { hasText: 'MainThread' });
        const unfolded = page.locator(`${threadRow}[aria-expanded="true"]`, { hasText: 'MainThread' });
        await eventually('the main thread unfolded in the Call Stack', async () => {
          if (!(await mainThread.isVisible()) || (await unfolded.isVisible())) return true;
          // A click toggles: give it time to show before judging (the view may refold it when
          // the thread's stop arrives, hence the retry).
          await mainThread.locator('.monaco-tl-twistie').click({ timeout: 1_000 });
          return unfolded.waitFor({ timeout: 3_000 }).then(() => true, () => false);
        }, { timeout: 30_000 });
        // The pause can land inside pathlib (`stop.exists()`): the loop's frame is then below.
        const frame = await workbench.frameShown('the loop of long_job.py', (f) => f.file === 'long_job.py');
        await workbench.callStackRow(frame.index).click();
        assert.equal(frame.name, 'train');
        const stepRow = page.locator('.debug-variables .monaco-list-row[aria-label^="step, value "]').first();
        const label = await eventually('"step" in the Variables view', () => stepRow.getAttribute('aria-label', { timeout: 1_000 }).catch(() => undefined));
        steps.push(Number(label.slice('step, value '.length)));
        await workbench.screenshot(`attached-${attempt}`);
        await workbench.debugAction('Disconnect');
        await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 30_000 });
        assert.equal(job.exitCode, null, 'detaching must leave the job running');
      }
      assert.ok(steps[1] > steps[0] && steps[0] >= 1, `step read twice: ${steps}`);
    } finally {
      await writeFile(stop, '');
      await eventually('the long job to end', () => job.exitCode !== null || job.signalCode !== null, { timeout: 60_000 })
        .catch(() => job.kill());
    }
    assert.equal(job.exitCode, 0);
  });

  runsViewSteps(session);
});

describe('an untrusted workspace', () => {
  // Workspace trust on (the default), and no start-up prompt: the folder opens in Restricted Mode.
  const session = useSession('untrusted', {
    'security.workspace.trust.enabled': true,
    'security.workspace.trust.startupPrompt': 'never',
  });
  const { step } = session;

  step('the run commands and lenses execute no code', async () => {
    const { workbench, workspace, server } = session;
    await workbench.page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).waitFor();
    await workbench.openFile('vision/train.py');
    await workbench.editorShows('class SmallCNN(nn.Module):');
    await workbench.screenshot('restricted-mode');

    const commands = ['Run', 'Debug', 'Profile'].map((verb) => `${verb} Current File (Quick-Dev)`);
    commands.push('Attach to Running Job');
    for (const command of commands) {
      const shown = await workbench.notificationTexts();
      const outcome = await workbench.tryCommand(`Quickdev: ${command}`);
      // Either the command is not offered, or running it tells the person why nothing ran.
      if (outcome === 'ran') {
        const message = await workbench.newNotification(shown);
        assert.match(message, /trust/i, `"${command}" in an untrusted workspace said: ${message}`);
        await workbench.clearNotifications();
      }
    }
    await workbench.screenshot('restricted-mode-commands');
    assert.equal(await workbench.activeEditor().locator('.codelens-decoration a').count(), 0);
    // No interpreter ran: not the language server, an interpreter check, a job or TensorBoard.
    const started = await server.processes();
    assert.deepEqual(started.filter((args) => /python/.test(args)), []);
    for (const folder of ['vision', 'text']) {
      const runs = path.join(workspace.folder(folder), '.quickdev');
      assert.ok(!existsSync(runs), `a run started in ${folder}`);
    }
  });
});

describe('a workspace trusted after it opened, its settings naming the interpreter', () => {
  // quickdev.python in the .code-workspace only: VS Code applies it once the workspace is
  // trusted, a moment after it says the trust was granted.
  const session = useSession('trust-granted', {
    'security.workspace.trust.enabled': true,
    'security.workspace.trust.startupPrompt': 'never',
  }, { pythonIn: 'workspace' });
  const { step } = session;

  step('once trusted, the status bar names the workspace\'s interpreter and no message names another', async () => {
    const { workbench } = session;
    const page = workbench.page;
    await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).waitFor();
    await workbench.openFile('vision/train.py');
    await workbench.runCommand('Workspaces: Manage Workspace Trust');
    await page.getByRole('button', { name: 'Trust', exact: true }).first().click({ timeout: 15_000 });
    await workbench.screenshot('trust-granted');
    await page.locator('.statusbar-item', { hasText: '.venv (3.' }).first().waitFor({ timeout: 60_000 });
    // Watch every message for a while after the trust: none names python3 (the interpreter
    // the setting resolved to before VS Code applied the workspace's settings).
    const seen = new Set();
    const until = Date.now() + 20_000;
    while (Date.now() < until) {
      for (const text of await workbench.notificationTexts()) seen.add(text);
      await page.waitForTimeout(500);
    }
    await workbench.screenshot('trust-granted-status-bar');
    for (const text of seen) {
      assert.ok(!/python3\b|not installed/.test(text) || text.includes(python), `after the trust: ${text}`);
    }
    // The interpreter checked is the one the workspace names: lenses come from its server.
    await workbench.openFile('vision/train.py');
    await workbench.goToLine(97);
    await eventually('lenses above the main guard', async () =>
      (await workbench.lensesAbove('if __name__ == "__main__":')).length >= 3,
    { timeout: 60_000 });
  });
});

/** The text of a 1-based line of a file. */
async function lineOf(file, line) {
  return (await readFile(file, 'utf8')).split('\n')[line - 1] ?? '';
}
