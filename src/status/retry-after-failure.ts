// A status pass that failed (the API server refused a write, timed out, or was away) is
// tried again after a growing delay, as a controller's work queue requeues a failed key:
// without it, what failed waited for the next unrelated change, and in a quiet cluster an
// Ingress could stay without its address indefinitely.

const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 30_000;

export class RetryAfterFailure {
  private delayMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly retry: () => void;

  constructor(retry: () => void) {
    this.retry = retry;
  }

  /** Schedules the retry (once, however many failures before it runs); returns its delay in ms. */
  failed(): number {
    if (this.timer !== undefined) return this.delayMs;
    this.delayMs = this.delayMs === 0 ? FIRST_DELAY_MS : Math.min(this.delayMs * 2, MAX_DELAY_MS);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.retry();
    }, this.delayMs);
    this.timer.unref();
    return this.delayMs;
  }

  /** A pass went through: the next failure starts from the first delay again. */
  succeeded(): void {
    this.delayMs = 0;
  }
}
