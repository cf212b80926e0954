// Latency figures over samples (ms): p50/p90/p99/max, and the machine load they were
// taken under (this VM is shared: a figure without its load says little).
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { processTree } from './processes.ts';
import type { FakeKubeApiServer } from '../../test/support/kube-apiserver/index.ts';

export interface LatencySummary {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** Nearest-rank percentiles: p99 of 100 samples is the 99th smallest, not an interpolation. */
export function summarize(samples: readonly number[]): LatencySummary {
  if (samples.length === 0) throw new Error('no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
  return { count: sorted.length, p50: rank(0.5), p90: rank(0.9), p99: rank(0.99), max: sorted.at(-1)! };
}

export function formatSummary(s: LatencySummary): string {
  const f = (ms: number) => ms.toFixed(1);
  return `p50 ${f(s.p50)} ms, p90 ${f(s.p90)} ms, p99 ${f(s.p99)} ms, max ${f(s.max)} ms over ${s.count} samples${s.count < 100 ? ' (fewer than 100: p99 is the max)' : ''}`;
}

/** The 1-minute load average and the cores, e.g. "load 1.32 on 2 cores". */
export function machineLoad(): string {
  return `load ${loadavg()[0]!.toFixed(2)} on ${navigatorCores()} cores`;
}

function navigatorCores(): number {
  return globalThis.navigator?.hardwareConcurrency ?? 0;
}

/** Waits until every Ingress in the test API server has a load-balancer status (portico's first writes); resolves with the ms it took. */
export async function statusWritten(api: { ingressesWithoutStatus(): Promise<number> }, timeoutMs = 300_000): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const pending = await api.ingressesWithoutStatus();
    if (pending === 0) return performance.now() - t0;
    if (performance.now() - t0 > timeoutMs) throw new Error(`${pending} Ingresses still without status after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Ingresses in the test API server without a load-balancer status yet (portico's first writes pending). */
export function ingressesWithoutStatus(api: FakeKubeApiServer): number {
  return api.list('Ingress').filter((o) => !((o as { status?: { loadBalancer?: { ingress?: unknown[] } } }).status?.loadBalancer?.ingress?.length)).length;
}

/** One sample's wall-clock window (Date.now()), for reportTail. */
export interface SampleWindow {
  readonly name: string;
  /** Text of the debug "objects changed" line that shows the change reached the store (BENCH_DEBUG runs). */
  readonly storeChange?: string;
  readonly from: number;
  readonly to: number;
  /** ms spent waiting for a CPU during the sample (cpuWaits), when measured. */
  readonly waited?: CpuWaits;
}

/** ms that main threads spent runnable but waiting for a CPU: the shared machine's share of a tail. */
export interface CpuWaits {
  /** the portico process that waited longest (primary or a worker) */
  readonly portico: number;
  /** the bench process, which times the samples */
  readonly bench: number;
}

/**
 * A probe of run-queue waits (the second field of /proc/PID/schedstat, the main thread's)
 * of portico's process tree, as it is when the probe is made, and of this process.
 * Call it before and after a sample and subtract (`waitedBetween`).
 */
export function cpuWaits(porticoPid: number): () => CpuWaitReading {
  const pids = processTree(porticoPid);
  return () => ({ portico: pids.map(runQueueMs), bench: runQueueMs(process.pid) });
}

/** Run-queue time so far, per portico process and of this one. */
export interface CpuWaitReading {
  readonly portico: readonly number[];
  readonly bench: number;
}

export function waitedBetween(before: CpuWaitReading, after: CpuWaitReading): CpuWaits {
  return { portico: Math.max(0, ...after.portico.map((ms, i) => ms - before.portico[i]!)), bench: after.bench - before.bench };
}

function runQueueMs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'latin1').split(' ')[1]) / 1e6;
  } catch {
    return 0; // gone, or not Linux
  }
}

/**
 * Prints the samples slower than `slowMs`, each with the idle collections
 * (src/util/idle-gc.ts; those of 50 ms or more are logged at info) that overlapped it: tells portico's own pauses
 * apart from the machine's in the tail.
 */
export function reportTail(windows: readonly SampleWindow[], logs: readonly Record<string, unknown>[], slowMs = 25): void {
  const collections = logs
    .filter((l) => l.msg === 'quiet: gave unused heap memory back' && typeof l.time === 'string' && typeof l.ms === 'number')
    .map((l) => ({ end: Date.parse(l.time as string), ms: l.ms as number }));
  console.log(`idle collections of 50 ms or more during the run: ${collections.length}${collections.length > 0 ? ` (pauses ${collections.map((c) => c.ms).join(', ')} ms)` : ''}`);
  const pauses = logs
    .filter((l) => l.msg === 'long garbage-collection pause' && typeof l.time === 'string' && typeof l.ms === 'number')
    .map((l) => ({ end: Date.parse(l.time as string), ms: l.ms as number, kind: String(l.kind) }));
  if (pauses.length > 0) console.log(`garbage-collection pauses of 20 ms or more (logged at debug): ${pauses.length}, longest ${Math.max(...pauses.map((p) => p.ms))} ms`);
  const measured = windows.filter((w) => w.waited !== undefined);
  if (measured.length > 0) {
    // Only the longest wait of one process is taken off: with workers the primary's and a
    // worker's waits may both have delayed the sample, so this over-states what portico costs.
    const less = measured.map((w) => Math.max(0, w.to - w.from - w.waited!.portico));
    console.log(`the same less the longest time one portico process's main thread waited for a CPU (runnable, not running): ${formatSummary(summarize(less))}`);
  }
  // Standalone mode: the periodic walks of the manifest tree (logged at debug as they end).
  const walks = logs
    .filter((l) => l.msg === 'manifest directory walked' && typeof l.time === 'string' && typeof l.walkMs === 'number')
    .map((l) => ({ end: Date.parse(l.time as string), ms: l.walkMs as number }));
  // The first walk is the initial load: only those while samples ran are counted.
  const sampling = walks.filter((x) => windows.length > 0 && x.end >= windows[0]!.from);
  if (walks.length > 0) console.log(`walks of the manifest tree while sampling (logged at debug): ${sampling.length}${sampling.length > 0 ? `, longest ${Math.max(...sampling.map((x) => x.ms))} ms` : ''}`);
  const swaps = logs.filter((l) => l.msg === 'route table updated' && typeof l.time === 'string').map((l) => ({ at: Date.parse(l.time as string), changeToServeMs: l.changeToServeMs }));
  for (const w of windows) {
    if (w.to - w.from < slowMs) continue;
    const overlapping = collections.filter((c) => c.end >= w.from && c.end - c.ms <= w.to);
    // The last swap in the window served the change: before it, the source and translation; after it, the first answer.
    const swap = swaps.filter((x) => x.at >= w.from && x.at <= w.to).at(-1);
    const stored = w.storeChange === undefined ? undefined : logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('objects changed') && l.msg.includes(w.storeChange!) && typeof l.time === 'string');
    const storedAt = stored === undefined ? '' : `, in the store after ${Date.parse(stored.time as string) - w.from} ms`;
    const phases = swap === undefined ? '' : `${storedAt}, table swapped after ${swap.at - w.from} ms (change -> swap ${String(swap.changeToServeMs)} ms), 200 ${w.to - swap.at} ms later`;
    // Logged as the pause ends; a pause overlaps the sample if it ended after it began and began before it ended.
    const gcs = pauses.filter((p) => p.end >= w.from && p.end - p.ms <= w.to);
    const overlappingWalks = walks.filter((x) => x.end >= w.from && x.end - x.ms <= w.to);
    const waited = w.waited === undefined ? '' : `, waited for a CPU: portico ${w.waited.portico.toFixed(1)} ms, the bench ${w.waited.bench.toFixed(1)} ms`;
    console.log(
      `  slow sample ${w.name}: ${w.to - w.from} ms${phases}${waited}${overlapping.length > 0 ? `, overlapped an idle collection of ${overlapping.map((c) => c.ms).join('+')} ms` : ''}${gcs.length > 0 ? `, overlapped GC pauses ${gcs.map((p) => `${p.kind} ${p.ms} ms`).join(', ')}` : ''}${overlappingWalks.length > 0 ? `, overlapped a manifest walk of ${overlappingWalks.map((x) => x.ms).join('+')} ms` : ''}`,
    );
  }
}
