// A job of about twenty seconds whose batches and steps are slow: its progress notification and
// its Runs view row change at least every 2 s the whole time (elapsed time, batches, steps).
// Registered in the trusted suite.
import assert from 'node:assert/strict';

const LABEL = 'slow_steps.py (run)';
const MAX_GAP_MS = 2_000;

export function progressSteps(session) {
  session.step('progress never freezes: the notification and the Runs view change at least every 2 s during a 20 s job', async () => {
    const { workbench } = session;
    const page = workbench.page;
    await workbench.showRuns();
    await workbench.openFile('vision/slow_steps.py');
    await workbench.editorShows('time.sleep(4)  # a slow step');
    await workbench.runCommand('Quickdev: Run Current File (Quick-Dev)');

    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: /running slow_steps\.py/ }).first();
    const row = workbench.runsRows(LABEL).first();
    await toast.waitFor({ timeout: 60_000 });
    await workbench.screenshot('progress-start');
    // Read both about four times a second until the run ends; note when each changed.
    const seen = { toast: [], row: [] };
    const note = (list, text) => {
      if (text && text !== list.at(-1)?.text) list.push({ at: Date.now(), text });
    };
    const started = Date.now();
    let shotAt = 0;
    for (;;) {
      const [toastText, rowText] = await Promise.all([
        toast.innerText({ timeout: 1_000 }).catch(() => ''),
        row.innerText({ timeout: 1_000 }).catch(() => ''),
      ]);
      note(seen.toast, toastText);
      note(seen.row, rowText);
      if (/passed|failed|stopped/.test(rowText)) break;
      if (Date.now() - shotAt > 8_000) {
        shotAt = Date.now();
        await workbench.screenshot(`progress-${Math.round((shotAt - started) / 1000)}s`);
      }
      assert.ok(Date.now() - started < 180_000, 'the slow job did not end within 3 minutes');
      await page.waitForTimeout(250);
    }
    await workbench.screenshot('progress-end');
    const running = (list) => list.filter((entry) => /running/.test(entry.text));
    for (const [where, list] of Object.entries(seen)) {
      const live = running(list);
      assert.ok(live.length >= 2, `${where}: ${JSON.stringify(list)}`);
      const span = live.at(-1).at - live[0].at;
      assert.ok(span >= 12_000, `${where} was live for ${span} ms only: not a long job`);
      const gaps = live.slice(1).map((entry, i) => entry.at - live[i].at);
      assert.ok(Math.max(...gaps) <= MAX_GAP_MS, `${where} froze for ${Math.max(...gaps)} ms: ${JSON.stringify(live)}`);
    }
    // Batches and steps are counted as they come, not only the clock.
    assert.ok(seen.row.some((entry) => /running.*1 batch/.test(entry.text)), JSON.stringify(seen.row));
    assert.ok(seen.toast.some((entry) => /\d+ step/.test(entry.text)) || seen.row.some((entry) => /\d+ step/.test(entry.text)));
  });
}
