// The journey's memory forecast step: the "Memory forecast" lens runs a job that forecasts the
// GPU memory of the script's training step; the message at the end and then the lens itself say
// "≈ … peak · fits …", and the result page draws the peak as a bar by category. Registered in
// the trusted suite of journey.test.mjs after the shape-error step (train.py is whole again).
import assert from 'node:assert/strict';

import { eventually } from '../lib/poll.mjs';

const GUARD = 'if __name__ == "__main__":';
const FORECAST = /≈ [\d.]+ [MG]B peak · fits 24 GB/;

export function memoryForecastSteps(session) {
  session.step('the Memory forecast lens forecasts the step: the lens shows the peak, the result page a bar', async () => {
    const { workbench } = session;
    await workbench.runCommand('View: Close All Editors');
    await workbench.openFile('vision/train.py');
    await workbench.goToLine(97);
    const before = await workbench.notificationTexts();
    await workbench.clickLens(GUARD, 'Memory forecast');
    const ended = await workbench.newNotification(before, { matching: /train\.py (passed|stopped)/, timeout: 120_000 });
    assert.match(ended, new RegExp(`memory forecast ${FORECAST.source}`));
    await workbench.screenshot('memory-forecast-ended');

    // The server asks the editor for lenses again: the lens now reads the forecast.
    const lens = await eventually('the lens to show the forecast', async () =>
      (await workbench.lensesAbove(GUARD)).find((candidate) => FORECAST.test(candidate.title)),
    { timeout: 60_000 });
    assert.match(lens.title, new RegExp(`^${FORECAST.source}$`));
    await workbench.screenshot('memory-forecast-lens');

    const toast = workbench.notifications().filter({ hasText: 'memory forecast' }).first();
    await toast.getByRole('button', { name: 'Show Result' }).click();
    const page = await workbench.webviewWith('GPU memory forecast');
    const bar = page.locator('svg.memory');
    await bar.waitFor({ timeout: 15_000 });
    assert.match(await bar.getAttribute('aria-label'), /^at the peak: parameters .*activations/);
    assert.ok((await bar.locator('rect').count()) >= 3, 'the bar has too few categories');
    await page.getByText('24 GB', { exact: true }).first().waitFor({ timeout: 15_000 });
    await workbench.screenshot('memory-forecast-result-page');
  });
}
