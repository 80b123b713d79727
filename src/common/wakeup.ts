/**
 * A sleep that can be cut short: background loops wait on it between rounds, and whoever has
 * news for them (new policies, an on-demand clean, shutdown) wakes them early.
 */
export class Wakeup {
  private wake: (() => void) | undefined;
  private pending = false;

  /** Resolves after ms, or at the next wake() (also one that came while not sleeping). */
  sleep(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  wakeUp(): void {
    if (this.wake) this.wake();
    else this.pending = true;
  }
}
