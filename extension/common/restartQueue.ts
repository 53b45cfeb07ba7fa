// Runs restarts one at a time; requests made while one runs collapse into one more run.
export class RestartQueue {
  private running: Promise<void> | undefined;
  private pending = false;

  constructor(private readonly restart: () => Promise<void>) {}

  /** Resolves once a restart that began after this call has finished. */
  request(): Promise<void> {
    if (this.running) {
      // The running loop goes round once more, so its promise covers this request too.
      this.pending = true;
      return this.running;
    }
    this.running = this.loop();
    return this.running;
  }

  /** Whether another restart was asked for while this one runs: its results are stale. */
  get overtaken(): boolean {
    return this.pending;
  }

  /** Resolves when no restart is running (at once if none is). */
  settled(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.pending = false;
        try {
          await this.restart();
        } catch {
          // The restart reports its own failures; the queue keeps serving later requests.
        }
      } while (this.pending);
    } finally {
      this.running = undefined;
    }
  }
}
