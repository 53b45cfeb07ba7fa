// Waiting for something a person would notice, with a deadline instead of a fixed sleep.

/**
 * Calls `check` until it returns a value other than undefined/false (and returns that value) or
 * the deadline passes; the error then names `what` and the last reason `check` gave.
 */
export async function eventually(what, check, { timeout = 15_000, interval = 100 } = {}) {
  const deadline = Date.now() + timeout;
  let lastError;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const reason = lastError ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${reason}`);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
