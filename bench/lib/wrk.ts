// Reading wrk's human-readable report (wrk 4.x with --latency).

export interface WrkResult {
  requestsPerSec: number;
  /** Latency percentiles in milliseconds. */
  p50Ms: number;
  p75Ms: number;
  p90Ms: number;
  p99Ms: number;
  requests: number;
  /** Responses that were not 2xx or 3xx. */
  non2xx: number;
  /** connect + read + write + timeout socket errors. */
  socketErrors: number;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "812.00us", "1.23ms", "2.00s", "1.00m" -> milliseconds. */
export function wrkDurationMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m|h)$/.exec(text.trim());
  if (!m) throw new Error(`unrecognised wrk duration ${JSON.stringify(text)}`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

/** Throws when the report lacks what a comparison needs (wrk failed, or ran without --latency). */
export function parseWrkOutput(output: string): WrkResult {
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(output);
  if (!rps) throw new Error(`no "Requests/sec" in wrk output:\n${output}`);
  const percentile = (p: number): number => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(output);
    if (!m) throw new Error(`no ${p}% latency in wrk output (was --latency given?):\n${output}`);
    return wrkDurationMs(m[1]!);
  };
  const requests = /^\s+(\d+) requests in /m.exec(output);
  const non2xx = /^\s+Non-2xx or 3xx responses:\s+(\d+)/m.exec(output);
  const socket = /^\s+Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/m.exec(output);
  return {
    requestsPerSec: Number(rps[1]),
    p50Ms: percentile(50),
    p75Ms: percentile(75),
    p90Ms: percentile(90),
    p99Ms: percentile(99),
    requests: requests ? Number(requests[1]) : 0,
    non2xx: non2xx ? Number(non2xx[1]) : 0,
    socketErrors: socket ? socket.slice(1, 5).reduce((sum, n) => sum + Number(n), 0) : 0,
  };
}

/** The middle value, or the mean of the two middle ones; NaN for none. */
export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/** The value below which a share q (0-1) of `values` lies, between the two nearest (as numpy's default). */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const below = Math.floor(at);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (at - below);
}

/**
 * a's throughput over b's in each round, as median and quartiles: the two ran within seconds
 * of each other, so a drift in the machine's speed over a run moves both.
 */
export function pairedRatios(a: readonly { requestsPerSec: number }[], b: readonly { requestsPerSec: number }[]): { median: number; lower: number; upper: number } {
  const ratios = a.slice(0, b.length).map((round, i) => round.requestsPerSec / b[i]!.requestsPerSec);
  return { median: median(ratios), lower: quantile(ratios, 0.25), upper: quantile(ratios, 0.75) };
}
