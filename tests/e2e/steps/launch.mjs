// The journey's steps through launch.json as a person uses it: a breakpoint clicked in the
// gutter and F5 on a generated configuration; a job configured by launch.json `env` and the
// folder's `.env`; a package's training module run as `python -m`. Registered in order inside
// the trusted suite of journey.test.mjs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import { readJsonc } from '../lib/launchFiles.mjs';
import { docImage, workbenchArea } from '../lib/docImages.mjs';
import { eventually } from '../lib/poll.mjs';
import { python } from '../lib/session.mjs';

/** What `pattern` matches in the job.log of the newest debug run under `runs`, once it does. */
async function newestDebugRun(runs, pattern) {
  return eventually(`${pattern} in the debug job's log`, async () => {
    const names = (await readdir(runs)).sort().reverse();
    for (const name of names) {
      const log = await readFile(path.join(runs, name, 'job.log'), 'utf8').catch(() => '');
      if (!/debugpy listens/.test(log)) continue;
      return pattern.exec(log)?.[0];
    }
    return undefined;
  });
}

export function launchSteps(session) {
  const { step } = session;

  step('a breakpoint clicked in the gutter, F5 on a generated configuration: a warm job stops there with no Quickdev frame in the Call Stack, tensors summarised, output in the Debug Console', async () => {
    const { workbench } = session;
    const page = workbench.page;
    await workbench.openFile('vision/train.py');
    await workbench.goToLine(52);
    await workbench.clickGutter('loss = loss_fn(logits, labels)');
    await workbench.screenshot('gutter-breakpoint');

    // The folder's own copy, as the dropdown names it in a multi-root workspace.
    await workbench.selectLaunchConfiguration('Quickdev: debug train.py (vision)');
    // The job starts warm (forked from a process that imported torch already) once the warm
    // process prepared after the last job (the folder's .env differs from the environment the
    // one prepared on opening the file had) has finished its imports. Under load that can take
    // longer than this step waits: a cold start is stopped and F5 pressed again, a few times.
    const runs = path.join(session.workspace.folder('vision'), '.quickdev', 'runs');
    let frame;
    let started;
    for (let attempt = 1; ; attempt++) {
      await workbench.activeEditor().click();
      await page.keyboard.press('F5');
      frame = await workbench.pausedAt('the gutter breakpoint', (f) => f.file === 'train.py' && f.name === 'train_step', { timeout: 120_000 });
      started = await newestDebugRun(runs, /started (warm|cold)[^\n]*/);
      if (/started warm/.test(started) || attempt === 3) break;
      await page.locator('.debug-toolbar .action-label[aria-label^="Stop ("], .debug-toolbar .action-label[aria-label^="Disconnect ("]').first().click();
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 60_000 });
      await newestDebugRun(runs, /job ended/);
    }
    assert.equal(frame.line, 52);
    // A warm job's Call Stack holds the script's frames only: none of Quickdev's
    // (warm/__main__.py, the job's runner) above them.
    assert.match(started, /started warm/, `the F5 debug job ${started}, three times`);
    const frames = await eventually('the whole Call Stack', async () => {
      const rows = await workbench.callStackRows();
      return rows.some((row) => /<module>/.test(row.label)) && rows;
    });
    const files = frames.map((row) => /^Stack Frame .+, line \d+, (.+)$/.exec(row.label)?.[1]).filter(Boolean);
    assert.deepEqual([...new Set(files)], ['train.py'], frames.map((row) => row.label).join('\n'));
    assert.match(await workbench.variableValue('images'), /^f32\[\d+, 3, 32, 32\] cpu$/);
    assert.match(await workbench.variableValue('logits'), /^f32\[\d+, 10\] cpu grad$/);
    await workbench.screenshot('f5-stopped-at-gutter-breakpoint');
    await docImage(page, 'debug-breakpoint', await workbenchArea(page, 900));

    // main() printed before the loop; debugpy sends it to the Debug Console.
    await workbench.debugConsoleShows('training on 4096 images');
    await workbench.screenshot('debug-console-output');

    await workbench.clickGutter('loss = loss_fn(logits, labels)', { removes: true });
    await workbench.debugAction('Continue');
    await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 90_000 });
    await workbench.showRuns();
    await workbench.runsRow('train.py (debug)', 'passed').waitFor({ timeout: 30_000 });
  });

  step('a job gets the env of its launch configuration and the folder\'s .env', async () => {
    const { workbench, workspace } = session;
    const folder = workspace.folder('vision');
    // Without them the script fails: the environment is what makes it pass.
    const bare = spawnSync(python, ['check_env.py'], { cwd: folder, encoding: 'utf8' });
    assert.notEqual(bare.status, 0);
    assert.match(bare.stderr, /KeyError: 'QUICKDEV_E2E_TOKEN'/);

    await workbench.selectLaunchConfiguration('Check environment (run) (vision)');
    await workbench.activeEditor().click();
    await workbench.page.keyboard.press('F5');
    await workbench.showRuns();
    await workbench.runsRow('check_env.py (run)', /passed|failed/).waitFor({ timeout: 90_000 });
    await workbench.screenshot('env-job-done');
    const runs = path.join(folder, '.quickdev', 'runs');
    const output = await eventually('the job\'s output', async () => {
      for (const run of await readdir(runs)) {
        const text = await readFile(path.join(runs, run, 'output.log'), 'utf8').catch(() => '');
        if (text.includes('token ')) return text;
      }
      return undefined;
    });
    assert.match(output, /token from-launch-json, data from \/tmp\/synthetic-data/);
    // The run's output streamed into its own channel in the Output panel.
    await workbench.page
      .locator('.part.panel .monaco-editor .view-line', { hasText: 'token from-launch-json' })
      .first()
      .waitFor({ timeout: 30_000 });
    await workbench.screenshot('env-job-output-channel');

    // Its result reads as a page, not JSON.
    const result = await workbench.openRunPage('check_env.py (run)', 'passed', 'Loaders');
    await result.getByText('stop reason').waitFor();
    assert.ok(await result.getByText('passed', { exact: true }).count());
    await workbench.screenshot('env-job-result-page');
  });

  step('a package\'s training module gets a "module" configuration; F5 stops at its breakpoint and it runs as python -m would', async () => {
    const { workbench, workspace } = session;
    const text = workspace.folder('text');
    // tagger/train.py imports its own package: generated as `python -m tagger.train` from the folder.
    const launch = await readJsonc(path.join(text, '.vscode', 'launch.json'));
    const generated = launch.value.configurations.find((c) => c.name === 'Quickdev: debug tagger/train.py');
    assert.equal(generated?.module, 'tagger.train', JSON.stringify(generated));
    assert.equal(generated.cwd, '${workspaceFolder}');
    assert.equal(generated.script, undefined);

    // Quick Open matches a nested file by its name and folders ("text • tagger"), not by a path.
    const row = workbench.page.locator('.quick-input-list .monaco-list-row', { hasText: 'text • tagger' }).first();
    await workbench.typeInPalette('tagger train.py', row, 15_000);
    await row.click();
    await workbench.editorShows('from .model import Tagger');
    await workbench.clickGutter('optimizer.zero_grad()');
    await workbench.selectLaunchConfiguration('Quickdev: debug tagger/train.py (text)');
    await workbench.activeEditor().click();
    await workbench.page.keyboard.press('F5');
    await workbench.pausedAt('the breakpoint in the module', (f) => f.file === 'train.py' && f.name === 'fit', { timeout: 120_000 });
    await workbench.screenshot('module-stopped-at-breakpoint');
    await workbench.clickGutter('optimizer.zero_grad()', { removes: true });
    await workbench.debugAction('Continue');
    // Run as python -m runs it: as __main__ of its package.
    await workbench.debugConsoleShows('tagger trained as __main__ in package tagger', { timeout: 120_000 });
    await workbench.screenshot('module-run-output');
  });
}
