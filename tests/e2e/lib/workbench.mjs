// Drives the VS Code workbench in Debian's Chromium the way a person does: keyboard, mouse,
// what is on the screen. Every wait has a deadline; nothing sleeps a fixed time.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';

import { eventually } from './poll.mjs';

export const CHROMIUM = process.env.QUICKDEV_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export async function launchBrowser() {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/** One browser page showing one workbench, with numbered screenshots of each step. */
export class Workbench {
  constructor(page, screenshotDir) {
    this.page = page;
    this.screenshotDir = screenshotDir;
    this.shots = 0;
  }

  static async open(browser, url, screenshotDir) {
    const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
    const page = await context.newPage();
    await mkdir(screenshotDir, { recursive: true });
    const workbench = new Workbench(page, screenshotDir);
    await page.goto(url);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    return workbench;
  }

  async screenshot(name) {
    this.shots += 1;
    const file = path.join(this.screenshotDir, `${String(this.shots).padStart(2, '0')}-${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  /** Runs a command from the palette by its full title, e.g. "Quickdev: Show Runs". */
  async runCommand(title, { timeout = 15_000 } = {}) {
    const input = await this.openQuickInput('>', timeout);
    await input.fill(`>${title}`);
    const row = this.page
      .locator('.quick-input-list .monaco-list-row')
      .filter({ has: this.page.locator('.label-name', { hasText: exactText(title) }) })
      .first();
    await row.waitFor({ timeout });
    await row.click();
    await this.quickInput().waitFor({ state: 'hidden', timeout });
  }

  quickInput() {
    return this.page.locator('.quick-input-widget');
  }

  async openQuickInput(prefix, timeout) {
    // F1 opens the command palette in the browser too (Ctrl+Shift+P can be taken by Chromium).
    await this.page.locator('.monaco-workbench').focus();
    await this.page.keyboard.press('F1');
    const input = this.quickInput().locator('.quick-input-box input');
    await input.waitFor({ state: 'visible', timeout });
    if (prefix !== '>') await input.fill(prefix);
    return input;
  }

  /** Opens a file by its path relative to the workspace, through Quick Open (Ctrl+P). */
  async openFile(relativePath, { timeout = 15_000 } = {}) {
    const input = await this.openQuickInput('>', timeout);
    await input.fill(relativePath);
    const name = path.basename(relativePath);
    const row = this.page
      .locator('.quick-input-list .monaco-list-row')
      .filter({ hasText: path.dirname(relativePath) })
      .filter({ has: this.page.locator('.label-name', { hasText: exactText(name) }) })
      .first();
    await row.waitFor({ timeout });
    await row.click();
    await this.page
      .locator('.tabs-container .tab.active', { hasText: name })
      .waitFor({ timeout });
  }

  /** Waits until the active editor shows `text` on one of its visible lines. */
  async editorShows(text, { timeout = 15_000 } = {}) {
    const line = this.page
      .locator('.editor-group-container.active .monaco-editor .view-line')
      .filter({ hasText: text });
    await line.first().waitFor({ timeout });
  }

  /** Runs `action` and returns the text of the first notification toast that appears after it. */
  async notificationAfter(action, { timeout = 30_000 } = {}) {
    const toasts = this.page.locator('.notifications-toasts .notification-toast');
    const before = new Set(await toasts.allInnerTexts());
    await action();
    return eventually(
      'a notification',
      async () => (await toasts.allInnerTexts()).find((text) => !before.has(text)),
      { timeout },
    );
  }

  /** The names of the top-level entries in the Explorer (the workspace folders). */
  async explorerRoots({ timeout = 15_000 } = {}) {
    const roots = this.page.locator('.explorer-folders-view .monaco-list-row[aria-level="1"]');
    await roots.first().waitFor({ timeout });
    return roots.evaluateAll((rows) => rows.map((row) => row.getAttribute('aria-label')));
  }
}

/** A regular expression matching exactly `text`, for locator filters. */
export function exactText(text) {
  return new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}
