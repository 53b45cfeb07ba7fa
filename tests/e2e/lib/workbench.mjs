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
    const number = String(this.shots).padStart(2, '0');
    const file = path.join(this.screenshotDir, `${number}-${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  /** Runs a command from the palette by its full title, e.g. "Quickdev: Show Runs". */
  async runCommand(title, { timeout = 15_000 } = {}) {
    const input = await this.typeInPalette(`>${title}`, this.focusedCommandRow(title), timeout);
    await this.pickFocusedCommand(input, title, timeout);
  }

  /**
   * Presses Enter once the palette's focused row is `title`, as filtered by what was typed: a
   * command run before is already focused (recently used) before the filter applies, and Enter
   * in that moment can be lost. Filtered rows highlight the typed letters.
   */
  async pickFocusedCommand(input, title, timeout) {
    await this.focusedCommandRow(title).waitFor({ timeout });
    await input.press('Enter');
    // The palette closes and runs the command. A command that asks something (a picker, an
    // input box) opens the same widget again at once, often before a look could see it hidden
    // (seen under load with Attach to Running Job): it has run once the text is not ours.
    const typed = `>${title}`;
    await eventually(`the palette to run "${title}"`, async () =>
      !(await this.quickInput().isVisible()) || (await input.inputValue({ timeout: 1_000 })) !== typed,
    { timeout });
  }

  focusedCommandRow(title) {
    return this.page
      .locator('.quick-input-list .monaco-list-row.focused')
      .filter({ has: this.page.locator('.label-name', { hasText: exactText(title) }) })
      .filter({ has: this.page.locator('.label-name .highlight') });
  }

  /**
   * Runs a command from the palette if the palette offers it: 'ran', or 'not offered' when the
   * palette answers that nothing matches.
   */
  async tryCommand(title, { timeout = 15_000 } = {}) {
    const row = this.commandRow(title);
    const nothing = this.quickInput().getByText('No matching commands');
    const input = await this.typeInPalette(`>${title}`, row.or(nothing).first(), timeout);
    if (await row.isVisible()) {
      await this.pickFocusedCommand(input, title, timeout);
      return 'ran';
    }
    await input.press('Escape');
    return 'not offered';
  }

  commandRow(title) {
    return this.page
      .locator('.quick-input-list .monaco-list-row')
      .filter({ has: this.page.locator('.label-name', { hasText: exactText(title) }) })
      .first();
  }

  quickInput() {
    return this.page.locator('.quick-input-widget');
  }

  /**
   * Opens the command palette, types `text` (">" commands, ":" a line, else Quick Open) and
   * waits until `shows` (a row of the list) is there; returns the palette's input. The palette
   * closes when something takes the focus, and a view that a command revealed can take it a
   * moment after the palette ran the command (seen once: the palette opened right after "Show
   * Runs" closed before the text went in). A person then presses F1 again, and so does this.
   */
  async typeInPalette(text, shows, timeout) {
    const input = this.quickInput().locator('.quick-input-box input');
    await eventually(`the command palette showing what "${text}" finds`, async () => {
      if (!(await input.isVisible())) {
        // F1 opens the palette in the browser too (Ctrl+Shift+P can be taken by Chromium).
        await this.page.locator('.monaco-workbench').focus();
        await this.page.keyboard.press('F1');
        await input.waitFor({ state: 'visible', timeout: 5_000 });
      }
      await input.fill(text, { timeout: 2_000 });
      await shows?.waitFor({ timeout: 5_000 });
      return true;
    }, { timeout });
    return input;
  }

  /** Opens a file by its path relative to the workspace, through Quick Open (Ctrl+P). */
  async openFile(relativePath, { timeout = 15_000 } = {}) {
    const name = path.basename(relativePath);
    const row = this.page
      .locator('.quick-input-list .monaco-list-row')
      .filter({ hasText: path.dirname(relativePath) })
      .filter({ has: this.page.locator('.label-name', { hasText: exactText(name) }) })
      .first();
    await this.typeInPalette(relativePath, row, timeout);
    await row.click();
    // The focused group's tab: after a split (TensorBoard beside the editor) another group
    // may also show a file of that name.
    await this.page
      .locator('.editor-group-container.active .tabs-container .tab.active', { hasText: name })
      .waitFor({ timeout });
  }

  /** Waits until the active editor shows `text` on one of its visible lines. */
  async editorShows(text, { timeout = 15_000 } = {}) {
    const line = this.page
      .locator('.editor-group-container.active .monaco-editor .view-line')
      .filter({ hasText: text });
    await line.first().waitFor({ timeout });
  }

  activeEditor() {
    return this.page.locator('.editor-group-container.active .monaco-editor').first();
  }

  /** Moves the cursor to a 1-based line through Go to Line, which scrolls it into view. */
  async goToLine(line, { timeout = 15_000 } = {}) {
    const input = await this.typeInPalette(`:${line}`, undefined, timeout);
    await input.press('Enter');
    await this.quickInput().waitFor({ state: 'hidden', timeout });
  }

  /**
   * The code lenses shown right above the editor line that contains `lineText`, as
   * `[{ title, index }]`; `index` is the lens link's place among all lens links in the editor.
   */
  async lensesAbove(lineText) {
    const editor = this.activeEditor();
    const line = editor.locator('.view-line').filter({ hasText: lineText }).first();
    const lineBox = await line.boundingBox();
    if (!lineBox) return [];
    const links = await editor.locator('.codelens-decoration a').evaluateAll((elements) =>
      elements.map((element) => {
        const rect = element.getBoundingClientRect();
        return { title: element.innerText.trim(), top: rect.top, bottom: rect.bottom };
      }),
    );
    return links
      .map((link, index) => ({ ...link, index }))
      .filter((link) => link.bottom <= lineBox.y + 1 && lineBox.y - link.bottom < lineBox.height)
      .map(({ title, index }) => ({ title, index }));
  }

  /** Waits for a lens titled `title` above the line holding `lineText`, and clicks it. */
  async clickLens(lineText, title, { timeout = 30_000 } = {}) {
    const lens = await eventually(`the "${title}" lens above "${lineText}"`, async () =>
      (await this.lensesAbove(lineText)).find((candidate) => candidate.title.includes(title)),
    { timeout });
    await this.activeEditor().locator('.codelens-decoration a').nth(lens.index).click();
  }

  /** Notification toasts and modal dialogs (an error in a command shows as a dialog). */
  notifications() {
    return this.page.locator('.notifications-toasts .notification-toast, .monaco-dialog-box');
  }

  async notificationTexts() {
    return new Set(await this.notifications().allInnerTexts());
  }

  /**
   * Waits for a notification whose text is not in `shown` (and matches `matching`, when given),
   * and returns its text.
   */
  async newNotification(shown, { timeout = 30_000, matching = /./ } = {}) {
    return eventually(
      `a notification matching ${matching}`,
      async () =>
        (await this.notifications().allInnerTexts()).find(
          (text) => !shown.has(text) && matching.test(text),
        ),
      { timeout },
    );
  }

  // --- debugging -------------------------------------------------------------------------

  /**
   * The Call Stack's rows in the order shown. The list reuses its row elements, so their order
   * in the page is not the order on screen (a row of the stack before the last step can come
   * first in the page): `data-index` is the place on screen. Sticky copies of rows left out.
   */
  async callStackRows() {
    const rows = this.page.locator('.debug-call-stack .monaco-list-row:not(.monaco-tree-sticky-row)');
    const seen = await rows.evaluateAll((elements) =>
      elements.map((element) => ({
        index: Number(element.getAttribute('data-index')),
        label: element.getAttribute('aria-label') ?? '',
        text: element.innerText,
      })),
    );
    return seen.sort((a, b) => a.index - b.index);
  }

  callStackRow(index) {
    return this.page.locator(`.debug-call-stack .monaco-list-row[data-index="${index}"]:not(.monaco-tree-sticky-row)`);
  }

  /** The top stack frame of the paused thread, as the Call Stack view shows it. */
  async topFrame() {
    // Frames sit under their thread's row, or at the top when the job shows one thread only.
    // Library frames (torch's) come folded as "Show N More Stack Frames": unfold them first.
    const seen = await this.callStackRows();
    const row = seen.find(
      (candidate) =>
        candidate.label.startsWith('Stack Frame ') || /More Stack Frames/.test(`${candidate.label} ${candidate.text}`),
    );
    if (!row) return undefined;
    if (/More Stack Frames/.test(`${row.label} ${row.text}`)) {
      // Clicked by its text, not its place: the view may re-render between reading and
      // clicking, and a click on the frame that took the place would focus that frame.
      await this.page
        .locator('.debug-call-stack .monaco-list-row:not(.monaco-tree-sticky-row)', { hasText: /More Stack Frames/ })
        .first()
        .click({ timeout: 1_000 });
      return undefined;
    }
    return parseFrame(row);
  }

  /**
   * Waits until the Call Stack shows a frame that `accept` takes (the topmost such), and
   * returns it with its row's `index`: where a pause lands in a library (pathlib, torch) the
   * user's frame is further down, as a person reads it.
   */
  async frameShown(what, accept, { timeout = 60_000 } = {}) {
    return eventually(`${what} in the Call Stack`, async () => {
      const frames = (await this.callStackRows()).map(parseFrame).filter(Boolean);
      return frames.find(accept);
    }, { timeout });
  }

  /** Waits until the debugger is paused with a top frame that `accept` takes, and returns it. */
  async pausedAt(what, accept = () => true, { timeout = 60_000 } = {}) {
    return eventually(
      `the debugger paused at ${what}`,
      async () => {
        const frame = await this.topFrame();
        return frame && accept(frame) ? frame : undefined;
      },
      { timeout },
    );
  }

  /**
   * Clicks the editor's gutter (the glyph margin, left of the line numbers) beside the first
   * visible line holding `lineText`, as a person sets a breakpoint, and waits for the red dot
   * (or, with `removes`, clicks the dot away and waits for it to go).
   */
  async clickGutter(lineText, { removes = false, timeout = 15_000 } = {}) {
    const editor = this.activeEditor();
    const line = editor.locator('.view-line').filter({ hasText: lineText }).first();
    await line.waitFor({ timeout });
    // Code lenses arrive after the file opens and push the lines below them down: click
    // only once the line has stayed put, as a person clicks what is on the screen.
    let lineBox = await line.boundingBox();
    await eventually(`"${lineText}" to stay put`, async () => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      const now = await line.boundingBox();
      const still = now && lineBox && now.y === lineBox.y;
      lineBox = now;
      return still;
    }, { timeout });
    const gutter = await editor.locator('.margin .glyph-margin').first().boundingBox();
    const x = gutter.x + gutter.width / 2;
    const y = lineBox.y + lineBox.height / 2;
    // The hover hint comes first; the click then sets the breakpoint.
    await this.page.mouse.move(x, y);
    await this.page.mouse.click(x, y);
    const dotBeside = async () => {
      const box = await line.boundingBox();
      if (!box) return false;
      const middle = box.y + box.height / 2;
      const dots = await editor.locator('.codicon-debug-breakpoint').evaluateAll((elements) =>
        elements.map((element) => element.getBoundingClientRect()),
      );
      return dots.some((dot) => Math.abs(dot.top + dot.height / 2 - middle) < box.height / 2);
    };
    const what = removes ? `no breakpoint beside "${lineText}"` : `a breakpoint beside "${lineText}"`;
    await eventually(what, async () => (await dotBeside()) !== removes, { timeout });
  }

  /** Picks a configuration in the Run and Debug view's dropdown by its exact label. */
  /** The configurations the Run and Debug dropdown offers (its separators and "Add Configuration…" left out). */
  async launchConfigurationsOffered() {
    await this.runCommand('View: Show Run and Debug');
    const select = this.page.locator('.start-debug-action-item select').first();
    await select.waitFor({ timeout: 30_000 });
    const options = await select.locator('option:not([disabled])').allInnerTexts();
    return options.filter((label) => label.trim() && !/^Add Config/i.test(label) && !/^─+$/.test(label.trim()));
  }

  async selectLaunchConfiguration(label, { timeout = 30_000 } = {}) {
    await this.runCommand('View: Show Run and Debug');
    // The dropdown sits in the view's title bar, outside the view's own content.
    const select = this.page.locator('.start-debug-action-item select').first();
    let offered = [];
    await eventually(`"${label}" in the Run and Debug dropdown`, async () => {
      offered = await select.locator('option').allInnerTexts().catch(() => []);
      return offered.includes(label);
    }, { timeout }).catch((error) => {
      throw new Error(`${error.message}; it offers ${JSON.stringify(offered)}`);
    });
    await select.selectOption({ label });
  }

  /** The value the Variables view shows for a top-level `name` ("name, value …"). */
  async variableValue(name, { timeout = 15_000 } = {}) {
    const row = this.page.locator(`.debug-variables .monaco-list-row[aria-label^="${name}, value "]`).first();
    await row.waitFor({ timeout });
    return (await row.getAttribute('aria-label')).slice(`${name}, value `.length);
  }

  /** The frame of a webview panel whose page shows `text` (webviews nest frames in frames). */
  async webviewWith(text, { timeout = 30_000 } = {}) {
    return eventually(`a webview showing "${text}"`, async () => {
      for (const frame of this.page.frames()) {
        if (await frame.getByText(text, { exact: true }).count().catch(() => 0)) return frame;
      }
      return undefined;
    }, { timeout });
  }

  /** Opens the Debug Console and waits for a line holding `text`. */
  async debugConsoleShows(text, { timeout = 30_000 } = {}) {
    await this.runCommand('Debug Console: Focus on Debug Console View');
    await this.page.locator('.repl .monaco-list-row', { hasText: text }).first().waitFor({ timeout });
  }

  /** Clicks a debug toolbar button ("Continue", "Step Over", "Step Into", ...). */
  async debugAction(name, { timeout = 15_000 } = {}) {
    await this.page
      .locator(`.debug-toolbar .action-label[aria-label^="${name} ("]`)
      .click({ timeout });
  }

  /**
   * Leaves the workbench as the next step expects it after a step failed half-way: menus and
   * the palette closed, no debug session left paused (one would take the next F5 or lens).
   */
  async recover({ timeout = 30_000 } = {}) {
    await this.page.keyboard.press('Escape');
    await this.page.keyboard.press('Escape');
    const toolbar = this.page.locator('.debug-toolbar');
    const stop = toolbar.locator('.action-label[aria-label^="Stop ("], .action-label[aria-label^="Disconnect ("]');
    await eventually('no debug session', async () => {
      if (!(await toolbar.isVisible())) return true;
      await stop.first().click({ timeout: 2_000 }).catch(() => {});
      return false;
    }, { timeout, interval: 1_000 });
  }

  /** Steps once and waits for the debugger to pause somewhere other than `from`. */
  async step(name, from, { timeout = 30_000 } = {}) {
    await this.debugAction(name);
    return this.pausedAt(`a new line after ${name}`, (frame) => frame.label !== from.label, {
      timeout,
    });
  }

  /** The path of the file in the active editor, from its breadcrumbs ("a/b/c.py"). */
  async activeEditorPath() {
    const items = this.page.locator(
      '.editor-group-container.active .breadcrumbs-control .monaco-breadcrumb-item',
    );
    return (await items.allInnerTexts()).map((text) => text.trim()).join('/');
  }

  /**
   * Waits until the active editor shows the file of the paused `frame` (VS Code opens it on each
   * stop) and returns its path as the breadcrumbs show it. A file of torch takes a while to open
   * and colour on a busy machine; the error says what the editor showed instead.
   */
  async editorOnFrame(frame, { timeout = 45_000 } = {}) {
    return eventually(`the editor on ${frame.file} (paused at ${frame.label})`, async () => {
      const shown = await this.activeEditorPath();
      if (shown.endsWith(`/${frame.file}`)) return shown;
      throw new Error(`the editor shows "${shown}"`);
    }, { timeout });
  }

  /**
   * Waits until an editor group shows a file whose path (as its breadcrumbs show it) `matches`,
   * with the cursor on `line`. Read from the group itself, not the status bar: a source link
   * clicked in a webview (TensorBoard) can keep the focus there, and the status bar then shows
   * no cursor position.
   */
  async fileOpenedAt(what, matches, line, { timeout = 30_000 } = {}) {
    return eventually(`${what} opened at line ${line}`, async () => {
      const groups = await this.page.locator('.editor-group-container').evaluateAll((elements) =>
        elements.map((group) => ({
          path: [...group.querySelectorAll('.breadcrumbs-control .monaco-breadcrumb-item')]
            .map((item) => item.innerText.trim())
            .join('/'),
          line: group.querySelector('.monaco-editor .active-line-number')?.innerText.trim() ?? '',
        })),
      );
      const shown = groups.find((group) => matches(group.path));
      if (!shown) throw new Error(`the editors show ${groups.map((group) => `"${group.path}"`).join(', ')}`);
      if (shown.line !== String(line)) throw new Error(`its cursor is on line ${shown.line}`);
      return shown.path;
    }, { timeout });
  }

  /** Expands a variable in the Variables view and returns the value shown for its `child`. */
  async variableChild(variable, child, { timeout = 15_000 } = {}) {
    // Rows are labelled "name, value …" for screen readers; the visible name reads "name =".
    const row = (name) =>
      this.page.locator(`.debug-variables .monaco-list-row[aria-label^="${name}, value "]`).first();
    const parent = row(variable);
    const found = row(child);
    const list = this.page.locator('.debug-variables .monaco-list');
    // The view refreshes its rows after each step, which can fold what was just unfolded; and
    // it renders only the rows in view: unfold, then scroll down through the children.
    await eventually(`"${child}" under "${variable}" in the Variables view`, async () => {
      if (await found.isVisible()) return true;
      if ((await parent.getAttribute('aria-expanded', { timeout: 1_000 })) !== 'true') {
        await parent.locator('.monaco-tl-twistie').click({ timeout: 1_000 });
        return false;
      }
      await list.hover();
      await this.page.mouse.wheel(0, 88);
      return false;
    }, { timeout });
    await found.scrollIntoViewIfNeeded();
    return (await found.getAttribute('aria-label')).slice(`${child}, value `.length);
  }

  /** Dismisses every notification, so that the next identical message shows as new. */
  async clearNotifications({ timeout = 15_000 } = {}) {
    await this.runCommand('Notifications: Clear All Notifications');
    await eventually('no notifications', async () => (await this.notifications().count()) === 0, {
      timeout,
    });
  }

  /** Runs `action` and returns the text of the first new notification (matching `matching`). */
  async notificationAfter(action, options = {}) {
    const shown = await this.notificationTexts();
    await action();
    return this.newNotification(shown, options);
  }

  /** A row of the Quickdev Runs view showing `label` (e.g. "train.py (run)") and `status`. */
  runsRow(label, status) {
    return this.runsRows(label).filter({ hasText: status }).first();
  }

  /**
   * Clicks a run's row until a webview shows `text` (its result page) and returns that
   * webview's frame. A click can be lost while the view redraws a live run's row (a person
   * clicks again): seen once, the row selected and no page opened.
   */
  async openRunPage(label, status, text, { timeout = 45_000 } = {}) {
    return eventually(`the page of ${label} showing "${text}"`, async () => {
      await this.runsRow(label, status).click();
      return this.webviewWith(text, { timeout: 8_000 }).catch(() => undefined);
    }, { timeout });
  }

  /**
   * Shows the Quickdev Runs view with room for its rows: below the Explorer's expanded
   * folders it can be a few pixels high, and a row not drawn cannot be found.
   */
  async showRuns() {
    await this.collapseExplorerFolders();
    await this.runCommand('Quickdev: Show Runs');
  }

  /** Collapses the Explorer's folders section, so the views below it get the room. */
  async collapseExplorerFolders({ timeout = 15_000 } = {}) {
    await this.runCommand('View: Show Explorer');
    const header = this.page.locator('.pane-header', { hasText: /\(Workspace\)/i }).first();
    await header.waitFor({ timeout });
    if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
    await eventually('the folders section collapsed', async () => (await header.getAttribute('aria-expanded')) === 'false', { timeout });
  }

  /**
   * Right-clicks `row` and runs `item` from its context menu. A click that lands while the menu
   * is still opening can only highlight the item; Enter then runs the highlighted one.
   */
  async contextMenu(row, item, { timeout = 15_000 } = {}) {
    const entry = this.page.getByRole('menuitem', { name: new RegExp(`^${item}`) });
    // A right-click on a row the view is re-rendering (a refresh) opens no menu: click again.
    await eventually(`"${item}" in the context menu`, async () => {
      if (await entry.isVisible()) return true;
      await row.click({ button: 'right', timeout: 2_000 });
      await entry.waitFor({ timeout: 2_000 });
      return true;
    }, { timeout });
    await entry.click();
    const menu = this.page.locator('.context-view .monaco-menu');
    if (await menu.isVisible()) {
      await menu.waitFor({ state: 'hidden', timeout: 2_000 }).catch(async () => {
        await entry.hover();
        await this.page.keyboard.press('Enter');
      });
    }
  }

  /** Every row of the Quickdev Runs view showing `label`. */
  runsRows(label) {
    return this.page
      .locator('.pane', { has: this.page.locator('.pane-header', { hasText: /Quickdev Runs/i }) })
      .locator('.monaco-list-row', { hasText: label });
  }

  /** Opens the Problems view from the status bar's error and warning counts. */
  async showProblems({ timeout = 15_000 } = {}) {
    const panel = this.page.locator('.markers-panel');
    if (!(await panel.isVisible())) {
      await this.page.locator('#status\\.problems').click({ timeout });
    }
    await panel.waitFor({ timeout });
  }

  problemRows() {
    // File rows and marker rows; a marker row names its line as "[Ln N, Col M]".
    return this.page.locator('.markers-panel .monaco-list-row').filter({ hasText: /Ln \d+/ });
  }

  /** The names of the top-level entries in the Explorer (the workspace folders). */
  async explorerRoots({ timeout = 15_000 } = {}) {
    const roots = this.page.locator('.explorer-folders-view .monaco-list-row[aria-level="1"]');
    await roots.first().waitFor({ timeout });
    return roots.evaluateAll((rows) => rows.map((row) => row.getAttribute('aria-label')));
  }
}

/** A Call Stack row's frame ("Stack Frame name, line N, file"), or undefined for other rows. */
function parseFrame({ index, label }) {
  const match = /^Stack Frame (.+), line (\d+), (.+)$/.exec(label);
  return match ? { name: match[1], line: Number(match[2]), file: match[3], label, index } : undefined;
}

/** A regular expression matching exactly `text`, for locator filters. */
export function exactText(text) {
  return new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}
