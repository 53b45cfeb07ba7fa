// Run with Arguments as a person uses it on a script that needs one (nanoGPT's way: a config
// file named on the command line): the lens asks, the run passes, the Runs view names the
// arguments, and the next time the prompt offers the same ones. Registered in the trusted suite.
import assert from 'node:assert/strict';

import { eventually } from '../lib/poll.mjs';

export function argumentsSteps(session) {
  const { step } = session;

  step('Run with Arguments on a script that needs one: it runs, the Runs view shows the arguments, they are remembered', async () => {
    const { workbench } = session;
    await workbench.runCommand('View: Close All Editors');
    await workbench.openFile('text/char_config.py');
    await workbench.editorShows('exec(open(sys.argv[1]).read())');
    // The script runs at module level: its lenses sit above its first line.
    const lensLine = '"""A character model configured as nanoGPT is';
    // Lenses come once the server has analysed the file.
    let titles = [];
    await eventually('the lenses above the first line', async () => {
      titles = (await workbench.lensesAbove(lensLine)).map((lens) => lens.title);
      return titles.includes('Run with Arguments…');
    }, { timeout: 30_000 }).catch((error) => {
      throw new Error(`${error.message}; lenses above the first line: ${titles}`);
    });

    await workbench.clickLens(lensLine, 'Run with Arguments…');
    const input = workbench.quickInput().locator('.quick-input-box input');
    await input.waitFor({ timeout: 15_000 });
    assert.equal(await input.inputValue(), '', 'nothing remembered for this script yet');
    await input.fill('config/tiny.py');
    await workbench.screenshot('run-with-arguments-prompt');
    await input.press('Enter');

    // Room for every run: the view draws only the rows that fit.
    await workbench.showRuns();
    const row = workbench.runsRow('char_config.py config/tiny.py (run)', /passed|stopped/);
    await row.waitFor({ timeout: 120_000 });
    await workbench.screenshot('runs-view-arguments');

    // The next time, the prompt offers the arguments used last for this script.
    await workbench.openFile('text/char_config.py');
    await workbench.clickLens(lensLine, 'Run with Arguments…');
    await input.waitFor({ timeout: 15_000 });
    assert.equal(await input.inputValue(), 'config/tiny.py');
    await workbench.screenshot('run-with-arguments-remembered');
    await input.press('Escape');
  });
}
