// The README's pictures of the editor, taken by the journey itself: with QUICKDEV_E2E_DOC_IMAGES
// set (`make e2e-images`), the steps that show what the README describes also save that part of
// the window as docs/images/<name>.png. Without it they save nothing.
//
// Each picture is cropped to what it shows and kept at most about 900 pixels wide: a page shows a
// README image at about that width, and a wider one would be scaled down until the editor's
// text is too small to read.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';

import { repoRoot } from './codeServer.mjs';

export const docImagesDir = process.env.QUICKDEV_E2E_DOC_IMAGES
  ? path.join(repoRoot, 'docs', 'images')
  : undefined;

/** The smallest box around every locator's box (each must be on screen). */
export async function boxAround(...locators) {
  const boxes = [];
  for (const locator of locators) {
    const box = await locator.boundingBox();
    if (!box) throw new Error(`not on screen, so not in the picture: ${locator}`);
    boxes.push(box);
  }
  const left = Math.min(...boxes.map((box) => box.x));
  const top = Math.min(...boxes.map((box) => box.y));
  const right = Math.max(...boxes.map((box) => box.x + box.width));
  const bottom = Math.max(...boxes.map((box) => box.y + box.height));
  return { x: left, y: top, width: right - left, height: bottom - top };
}

/** The box of the workbench from its left edge to `width`, between the sidebar's top and the
 * panel's (the editors' bottom where no panel shows). */
export async function workbenchArea(page, width) {
  const top = (await boxAround(page.locator('.part.sidebar'))).y;
  const panel = await page.locator('.part.panel').boundingBox();
  const editors = await boxAround(page.locator('.part.editor'));
  const bottom = panel && panel.height > 0 ? panel.y : editors.y + editors.height;
  return { x: 0, y: top, width, height: bottom - top };
}

/**
 * Saves the part of the page inside `clip` ({x, y, width, height}, page pixels) as
 * docs/images/<name>.png, when pictures are asked for; `pad` pixels of margin around it.
 */
export async function docImage(page, name, clip, { pad = 8 } = {}) {
  if (!docImagesDir) return undefined;
  const viewport = page.viewportSize();
  const x = Math.max(0, Math.floor(clip.x - pad));
  const y = Math.max(0, Math.floor(clip.y - pad));
  const area = {
    x,
    y,
    width: Math.min(viewport.width - x, Math.ceil(clip.width + 2 * pad)),
    height: Math.min(viewport.height - y, Math.ceil(clip.height + 2 * pad)),
  };
  await mkdir(docImagesDir, { recursive: true });
  const file = path.join(docImagesDir, `${name}.png`);
  // No caret blinking in the picture, and no mouse-over highlight it did not ask for.
  await page.screenshot({ path: file, clip: area, caret: 'hide', animations: 'disabled' });
  return file;
}
