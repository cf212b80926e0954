// One story per Kubernetes API outage in the log, instead of a warning per watched kind
// per retry. Everything that calls the API in a loop (a reflector per kind, leader
// election) reports each failure and each success here, and this logs:
// - one warning when the outage starts: the server, the error, and every caller that
//   failed within the first `gatherMs` (they all fail within a second of each other);
// - a reminder at most every `reminderMs` while it lasts, and at once when an error
//   not seen yet in this outage appears (a refused connection turning into a 401);
// - one line when every caller that failed has succeeded again.
// A failure that heals within `gatherMs` (a watch reset and resumed) logs nothing. The
// callers keep their own retries and log each one at debug level.
import type { Logger } from 'pino';

export interface ApiOutageLogOptions {
  server: string;
  log: Pick<Logger, 'warn' | 'info'>;
  /** What is served meanwhile ("serving the last known routes"...). */
  meanwhile?: () => string;
  /** How long failures are gathered before the first line (default 1 s). */
  gatherMs?: number;
  /** Least time between reminders while the outage lasts (default 60 s). */
  reminderMs?: number;
  now?: () => number;
}

export class ApiOutageLog {
  private readonly o: ApiOutageLogOptions;
  private readonly gatherMs: number;
  private readonly reminderMs: number;
  private readonly now: () => number;
  /** Each caller failing now, with its last error. */
  private readonly failing = new Map<string, string>();
  /** Every caller that failed during this outage. */
  private readonly affected = new Set<string>();
  /** Errors already named in a line during this outage. */
  private readonly named = new Set<string>();
  private since = 0;
  private started = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(o: ApiOutageLogOptions) {
    this.o = o;
    this.gatherMs = o.gatherMs ?? 1000;
    this.reminderMs = o.reminderMs ?? 60_000;
    this.now = o.now ?? Date.now;
  }

  /** `who` ("Ingress", "leader election") could not use the API: `error` names the cause. */
  failed(who: string, error: string): void {
    if (this.failing.size === 0 && !this.started && this.timer === undefined) {
      this.since = this.now();
      this.schedule(this.gatherMs);
    }
    this.failing.set(who, error);
    this.affected.add(who);
    // A new cause during a logged outage is said soon (gathered like the first line), not at the next reminder.
    if (this.started && !this.named.has(error)) this.schedule(this.gatherMs);
  }

  /** `who` used the API successfully. */
  succeeded(who: string): void {
    if (!this.failing.delete(who) || this.failing.size > 0) return;
    this.clearTimer();
    if (this.started) {
      this.o.log.info(
        { server: this.o.server, outageMs: this.now() - this.since, affected: [...this.affected].sort() },
        `Kubernetes API ${this.o.server} works again after ${duration(this.now() - this.since)} (${[...this.affected].sort().join(', ')})`,
      );
    }
    this.started = false;
    this.affected.clear();
    this.named.clear();
  }

  stop(): void {
    this.clearTimer();
  }

  private schedule(ms: number): void {
    this.clearTimer();
    this.timer = setTimeout(() => this.flush(), ms);
    this.timer.unref();
  }

  private clearTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Writes the outage's first line or a reminder, and schedules the next reminder. */
  private flush(): void {
    this.timer = undefined;
    if (this.failing.size === 0) return;
    const byError = new Map<string, string[]>();
    for (const [who, error] of [...this.failing].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const list = byError.get(error);
      if (list) list.push(who);
      else byError.set(error, [who]);
    }
    const causes = [...byError].map(([error, who]) => `${error} (${who.join(', ')})`).join('; ');
    const meanwhile = this.o.meanwhile ? `; ${this.o.meanwhile()}` : '';
    const fields = { server: this.o.server, err: [...byError.keys()], failing: [...this.failing.keys()], outageMs: this.now() - this.since };
    if (!this.started) {
      this.o.log.warn(fields, `cannot use the Kubernetes API ${this.o.server}: ${causes}${meanwhile}; retrying, with a reminder every ${duration(this.reminderMs)} until it works`);
      this.started = true;
    } else {
      this.o.log.warn(fields, `still cannot use the Kubernetes API ${this.o.server} after ${duration(this.now() - this.since)}: ${causes}${meanwhile}; retrying`);
    }
    for (const error of byError.keys()) this.named.add(error);
    this.schedule(this.reminderMs);
  }
}

/** The error with its cause: undici says "fetch failed" and keeps "connect ECONNREFUSED 10.0.0.1:6443" in cause. */
export function describeApiError(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    if (cause?.message && cause.message !== err.message) return `${err.message}: ${cause.message}`;
    return cause?.code ? `${err.message} (${cause.code})` : err.message;
  }
  return String(err);
}

/** 850 ms, 12 s, 3 min 5 s. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  if (h > 0) return `${h} h ${m % 60} min`;
  return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
}
