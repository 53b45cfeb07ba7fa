// The journey's multi-root step: the SECOND folder's script profiled, and its profiler frames
// opened from TensorBoard. Both folders hold a train.py: a frame of the run's own script must
// open text/train.py, and a torch frame torch's file in the job interpreter's site-packages.
import assert from 'node:assert/strict';
import path from 'node:path';

import { eventually } from '../lib/poll.mjs';
import { profiledRun } from '../lib/profiledRun.mjs';

export function multiRootSteps(session) {
  session.step('the second folder\'s script profiled: its frame opens text/train.py, a torch frame torch\'s own file', async () => {
    const { workbench, workspace } = session;
    const page = workbench.page;
    // Tidied up first, as a person would: the panel and the script share the window's width.
    await workbench.runCommand('View: Close All Editors');
    await workbench.openFile('text/train.py');
    await workbench.goToLine(78);
    const shown = await workbench.notificationTexts();
    await workbench.clickLens('if __name__ == "__main__":', 'Profile');
    await workbench.newNotification(shown, { matching: /profiling train\.py/i });
    const runId = await eventually('a profiled run in the text folder', () =>
      profiledRun(path.join(workspace.folder('text'), '.quickdev', 'runs')),
    { timeout: 120_000 });
    await page.locator('.tabs-container .tab', { hasText: runId }).waitFor({ timeout: 120_000 });
    const plugin = await eventually('the profiler plugin showing the text run', async () => {
      for (const frame of page.frames()) {
        if (!/\/data\/plugin\/pytorch_profiler\//.test(frame.url())) continue;
        if (await frame.getByText(runId, { exact: true }).count().catch(() => 0)) return frame;
      }
      return undefined;
    }, { timeout: 60_000 });
    await plugin.getByRole('button', { name: 'Overview' }).click();
    await plugin.getByRole('option', { name: 'Operator' }).click();
    await plugin.getByText('Operator View').waitFor({ timeout: 30_000 });
    await plugin.getByText('View CallStack').first().click();
    await plugin.getByText('View call frames').first().click();
    await workbench.screenshot('text-run-call-frames');

    const own = plugin.locator('button', { hasText: /^train\.py\(\d+\)/ }).first();
    const line = Number(/\((\d+)\)/.exec(await own.innerText())[1]);
    await own.click();
    await workbench.fileOpenedAt('text/train.py', (where) => where.endsWith('text/train.py'), line);
    await workbench.screenshot('text-frame-opened');

    const torchFrame = plugin.locator('button', { hasText: /^torch\/[\w/]+\.py\(\d+\)/ }).first();
    const [, file, torchLine] = /^(torch\/[\w/]+\.py)\((\d+)\)/.exec(await torchFrame.innerText());
    await torchFrame.click();
    await workbench.fileOpenedAt(
      `${file} from site-packages`,
      (where) => where.endsWith(file) && where.includes('site-packages/'),
      Number(torchLine),
    );
    assert.equal(await workbench.notifications().filter({ hasText: /Locate/ }).count(), 0);
    await workbench.screenshot('torch-frame-opened');
  });
}
