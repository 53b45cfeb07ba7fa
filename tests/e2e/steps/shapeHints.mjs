// The journey's tensor-shape step: after a quick-dev run of the script open in the editor, each
// assignment in its forward shows the shapes the run saw as an inlay hint, a hover on the name
// shows the statistics and the run, and the lens above clears them. Registered inside the
// trusted suite of journey.test.mjs, right after a run of vision/train.py has passed.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { boxAround, docImage } from '../lib/docImages.mjs';
import { eventually } from '../lib/poll.mjs';

export function shapeHintsSteps(session) {
  const { step } = session;

  step('after the run, the forward shows tensor shapes as inlay hints, the hover the statistics, and one click clears them', async () => {
    const { workbench, workspace } = session;
    const script = path.join(workspace.folder('vision'), 'train.py');
    const source = await readFile(script, 'utf8');
    const batch = Number(/"--batch-size", type=int, default=(\d+)/.exec(source)[1]);
    await workbench.openFile('vision/train.py');
    await workbench.goToLine(37);
    const editor = workbench.activeEditor();
    const line = (text) => editor.locator('.view-line').filter({ hasText: text }).first();
    // A hint's spaces are non-breaking in the editor's DOM.
    const shown = async (text) => (await line(text).innerText()).replace(/\s+/g, ' ');

    // 32x32 images, two 2x2 pools: 16 channels of 8x8; the inlay hint is part of the line's text.
    const hinted = {
      'features = self.features(images)': `features: f32[${batch}, 16, 8, 8]`,
      'flat = features.flatten(start_dim=1)': `flat: f32[${batch}, 1024]`,
    };
    for (const [statement, hint] of Object.entries(hinted)) {
      await eventually(`the hint "${hint}"`, async () => (await shown(statement)).includes(hint), {
        timeout: 60_000,
      });
    }
    await workbench.screenshot('shape-hints');
    // From the lens above the forward to the first line of the training step's body.
    const lens = editor.locator('.codelens-decoration', { hasText: 'Debug forward' }).first();
    const hintedLines = await boxAround(lens, line('images, labels = batch'));
    const left = (await editor.boundingBox()).x;
    await docImage(workbench.page, 'tensor-shapes', { ...hintedLines, x: left, width: 880 }, { pad: 3 });

    // The hover on the bound name: the tensor as Variables writes it, its statistics, the run.
    // The mouse on the name's first characters, wherever the editor's tokens split the line.
    const at = await line('flat = features.flatten(start_dim=1)').evaluate((element) => {
      const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const index = node.textContent.indexOf('flat');
        if (index < 0) continue;
        const range = document.createRange();
        range.setStart(node, index);
        range.setEnd(node, index + 'flat'.length);
        const box = range.getBoundingClientRect();
        return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
      }
      return null;
    });
    assert.ok(at, 'the name flat is not on its line');
    await workbench.page.mouse.move(at.x, at.y);
    const hover = workbench.page.locator('.monaco-hover').filter({ hasText: 'mean' }).first();
    await hover.waitFor({ timeout: 15_000 });
    const text = (await hover.innerText()).replace(/\s+/g, ' ');
    assert.match(text, new RegExp(`flat: f32\\[${batch}, 1024\\] cpu grad`));
    assert.match(text, /min .* · max .* · mean .* · NaN 0 · Inf 0/);
    assert.match(text, /quick-dev run/);
    await workbench.screenshot('shape-hover');
    await workbench.page.keyboard.press('Escape');

    // The lens above the file's first hinted statement clears every hint until the next run.
    await workbench.goToLine(18);
    await workbench.clickLens('labels = torch.randint(', 'Tensor shapes from run');
    await workbench.goToLine(37);
    await eventually('the hints gone', async () => !(await shown('flat = features.flatten')).includes('f32['), {
      timeout: 30_000,
    });
    await workbench.screenshot('shape-hints-cleared');
  });
}
