// The journey's steps in the Runs view as a person uses it: a run started in a terminal shows
// up by itself (no Refresh), is compared with another run and deleted from the row's context
// menu. Registered in order inside the trusted suite of journey.test.mjs, after the profile steps
// (the comparison's other run is the second folder's profiled one).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';

import { docImage, workbenchArea } from '../lib/docImages.mjs';
import { eventually } from '../lib/poll.mjs';
import { python } from '../lib/session.mjs';

const RUN_ID = 'e2e-terminal-run';
// A script of its own, so its row is told apart from the train.py runs of earlier steps.
const SCRIPT = 'finetune.py';
const LABEL = `${SCRIPT} (run)`;

function exited(child) {
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => resolve(code));
  });
}

export function runsViewSteps(session) {
  const { step } = session;

  step('a run started in a terminal appears in the Runs view', async () => {
    const { workbench, workspace } = session;
    // Room for every run: the view draws only the rows that fit.
    await workbench.showRuns();
    const rows = workbench.runsRows(LABEL);
    assert.equal(await rows.count(), 0);
    const folder = workspace.folder('text');
    await copyFile(path.join(folder, 'train.py'), path.join(folder, SCRIPT));
    // As a person runs it in a terminal: the editor is not told, only the runs directory changes.
    const job = spawn(python, ['-m', 'quickdev', 'run', '--run-id', RUN_ID, SCRIPT], { cwd: folder, stdio: 'ignore' });
    assert.equal(await exited(job), 0);
    assert.ok(existsSync(path.join(folder, '.quickdev', 'runs', RUN_ID, 'result.json')));
    // Nobody presses Refresh: the view notices the new run directory by itself.
    await workbench.runsRow(LABEL, 'passed').waitFor({ timeout: 30_000 });
    await workbench.screenshot('runs-view-terminal-run');
  });

  step('Compare Runs from a run\'s context menu shows both runs side by side', async () => {
    const { workbench } = session;
    await workbench.showRuns();
    await workbench.contextMenu(workbench.runsRow(LABEL, 'passed'), 'Compare Runs');
    // One run chosen: the other is picked from the list of runs.
    const input = workbench.quickInput().locator('.quick-input-box input');
    await input.waitFor({ timeout: 15_000 });
    await input.fill('train.py (profile)');
    await workbench.quickInput().locator('.quick-input-list .monaco-list-row.focused').waitFor({ timeout: 15_000 });
    await workbench.screenshot('compare-pick-other-run');
    await input.press('Enter');
    const frame = await workbench.webviewWith('optimizer steps');
    await frame.getByText(RUN_ID, { exact: true }).first().waitFor({ timeout: 15_000 });
    assert.ok(await frame.getByText('last loss', { exact: true }).count());
    await workbench.screenshot('compare-runs-page');
  });

  step('one result tab reused; Delete Run asks first, then removes the run from the view and the disk, and closes its result tab', async () => {
    const { workbench, workspace } = session;
    const page = workbench.page;
    const runDir = path.join(workspace.folder('text'), '.quickdev', 'runs', RUN_ID);
    await workbench.showRuns();
    // One result tab, reused by the next result opened, as the preview editor is.
    const resultTabs = page.locator('.tabs-container .tab[aria-label^="Run "]');
    await workbench.openRunPage('check_env.py (run)', 'passed', 'Loaders');
    const showsTheRun = async () =>
      (await resultTabs.count()) === 1 && (await resultTabs.first().getAttribute('aria-label')).includes(RUN_ID);
    // Clicked again while it does not show (a click lost to a redraw, as in openRunPage).
    await eventually('the result tab showing the run', async () => {
      if (await showsTheRun()) return true;
      await workbench.runsRow(LABEL, 'passed').click();
      return false;
    }, { timeout: 30_000, interval: 3_000 });
    await workbench.screenshot('result-tab-reused');
    await docImage(page, 'runs-and-result', await workbenchArea(page, 900));
    const deleteFromMenu = async () => {
      await workbench.contextMenu(workbench.runsRow(LABEL, 'passed'), 'Delete Run');
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.getByText(`Delete run ${RUN_ID} of ${SCRIPT}`).waitFor({ timeout: 15_000 });
      return dialog;
    };
    // Cancel keeps it.
    let dialog = await deleteFromMenu();
    await workbench.screenshot('delete-run-confirm');
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'hidden', timeout: 15_000 });
    assert.ok(existsSync(runDir), 'Cancel deleted the run');

    dialog = await deleteFromMenu();
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await eventually('the run gone from the disk', () => !existsSync(runDir), { timeout: 30_000 });
    await eventually('the run gone from the Runs view', async () => (await workbench.runsRows(LABEL).count()) === 0, { timeout: 30_000 });
    // Its result tab closed with it.
    await eventually('the deleted run\'s result tab closed', async () => (await resultTabs.count()) === 0, { timeout: 15_000 });
    await workbench.screenshot('runs-view-after-delete');
  });
}
