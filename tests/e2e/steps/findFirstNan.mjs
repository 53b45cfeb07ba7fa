// The journey's NaN hunt step: the "Find first NaN" lens on a script whose embedding has a
// padding index (its init writes a row of the weight in place under no_grad, which once made
// the hunt give up) debugs it until the first NaN reaches the loss, and the debugger stops in
// the frame whose operation made it: the mean over no token, 0 / 0. Registered in the trusted
// suite of journey.test.mjs.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const GUARD = 'if __name__ == "__main__":';
const ORIGIN = 'pooled = summed / mask.sum(dim=1)';

export function findFirstNanSteps(session) {
  session.step('Find first NaN on a script with a padding index stops where the NaN was made', async () => {
    const { workbench, workspace } = session;
    const script = path.join(workspace.folder('text'), 'padded_reviews.py');
    const lines = (await readFile(script, 'utf8')).split('\n');
    const originLine = lines.findIndex((line) => line.includes(ORIGIN)) + 1;
    const guardLine = lines.findIndex((line) => line.startsWith(GUARD)) + 1;
    await workbench.runCommand('View: Close All Editors');
    await workbench.openFile('text/padded_reviews.py');
    await workbench.goToLine(guardLine);
    await workbench.clickLens(GUARD, 'Find first NaN');
    // Where a person reads the stop: the Run and Debug view (its Call Stack) opens by itself
    // for a window's first debug session only.
    await workbench.runCommand('View: Show Run and Debug');

    // A post-mortem stop at the origin: the division in the model's forward, with the
    // hunt's finding as the exception, and the frames that called it below.
    const frame = await workbench.pausedAt(
      'the mean over no token',
      (f) => f.file === 'padded_reviews.py' && f.name === 'forward',
      { timeout: 180_000 },
    );
    assert.equal(frame.line, originLine, `stopped at ${frame.label}`);
    const widget = workbench.page.locator('.exception-widget').first();
    await widget.waitFor({ timeout: 30_000 });
    const said = (await widget.innerText()).replace(/\s+/g, ' ');
    assert.match(said, /NaN from torch\.Tensor\.div, from finite inputs in MeanPooled, step 6 \(forward\)/);
    assert.ok(!/could not follow/.test(said), said);
    const stack = (await workbench.callStackRows()).map((row) => row.label).join('\n');
    assert.match(stack, /main/, stack);
    await workbench.screenshot('find-first-nan-stopped');

    await workbench.debugAction('Continue');
    await workbench.page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 90_000 });
    await workbench.showRuns();
    await workbench.runsRow('padded_reviews.py', 'failed').waitFor({ timeout: 30_000 });
    await workbench.screenshot('find-first-nan-run-failed');
  });
}
