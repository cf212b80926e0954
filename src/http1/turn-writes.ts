// Whole messages for plain TCP sockets, gathered through one turn of the event loop and
// written together once its I/O callbacks have run (setImmediate runs right after them).
//
// Why: a write to a socket whose reader waits wakes the reader's core. Written as each
// request is handled, every response and every request to a pod woke the other side
// alone: between two of portico's writes the reader (a client, a pod) had gone back to
// sleep, and waking a sleeping core is dear (on a VM an interrupt through the host). In a
// perf profile of one pinned worker, those wake-ups were 14% of its CPU. Written together,
// the first write of a turn wakes a reader and the rest find it awake. On one core, in
// fresh rounds against the same build writing at once: 5-18% more requests, p99 2.20
// against 2.67 ms (bench/run.ts --variant-env, 2026-11-29 23:41-23:44).
//
// That pays at saturation, where the reader's core has work anyway. Below it, a message
// that waits is latency, and the reader's core could have worked beside this one: paced
// at 17k req/s, waiting for the end of the turn had p99 2.40-2.75 ms against 2.04-2.33
// writing at once. So messages wait only while the worker is busy (sampled, writesWait), and
// are written at once otherwise.
//
// The order of bytes on a socket must stay the order they were given in, so anything that
// writes to, ends or destroys a socket that may hold a deferred message calls settle(socket)
// first: it writes that socket's messages now.
import type { Socket } from 'node:net';
import { QUEUED, WRITTEN, writeDirect } from './direct-write.ts';
import { RunDelay } from '../util/run-delay.ts';

const kDeferred = Symbol('portico.deferredWrites');
type DeferringSocket = Socket & { [kDeferred]?: number };

/**
 * socket, bytes, socket, bytes...: in the order given, up to `pendingEnd`; a settled entry's
 * socket is null. Kept at its size from turn to turn (emptied, not shortened), so that a
 * turn does not grow a new array.
 */
const pending: (Socket | Buffer | null)[] = [];
let pendingEnd = 0;
let scheduled = false;
/**
 * Whether the worker is busy: a sample found its loop running callbacks LOOP_BUSY of the
 * time, or its main thread ready to run but waiting for a CPU DELAY_BUSY of it (a worker
 * that shares saturated cores with others, whose loop therefore idles part of the time),
 * and no sample since found both below their FREE marks (apart, so that the CPU saved once
 * messages wait does not flip it back at once). Then messages wait for the end of the turn
 * (writesWait). Otherwise they are written at once: below saturation any wait was latency.
 * A wait of at most 30 µs, or until the next head, still had p50 ~40 µs and p99 0.26-0.38
 * ms above writing at once, paced at 17k req/s (2026-11-30 01:35-02:27). Measured here: a
 * pinned worker paced at 17k req/s, loop 42% busy and waiting ~4%; 2 workers beside wrk
 * and the upstream on 2 cores at saturation, loops 46% and 78% busy and waiting ~20% on
 * average over a round, 44% at the 90th percentile of 200 ms samples.
 */
let workerBusy = false;
const LOOP_SAMPLE_MS = 20;
const LOOP_BUSY = 0.9;
const LOOP_FREE = 0.75;
const DELAY_BUSY = 0.25;
const DELAY_FREE = 0.15;
let runDelay: RunDelay | undefined;
/** Tests: messages always wait, so that every path that must settle a socket first is exercised. */
let alwaysWait = process.env.TURN_WRITES_WAIT === 'always';
/** Sampling runs while messages are written, and stops after a sample without any: an idle process is not woken 50 times a second. */
let sampler: NodeJS.Timeout | undefined;
let lastLoop = performance.eventLoopUtilization();
let messagesSinceSample = 0;

function sampleLoop(): void {
  const now = performance.eventLoopUtilization();
  const utilization = performance.eventLoopUtilization(now, lastLoop).utilization;
  lastLoop = now;
  const waited = runDelay!.share();
  if (utilization >= LOOP_BUSY || waited >= DELAY_BUSY) workerBusy = true;
  else if (utilization < LOOP_FREE && waited < DELAY_FREE) workerBusy = false;
  if (messagesSinceSample === 0) {
    clearInterval(sampler);
    sampler = undefined;
    workerBusy = false;
  }
  messagesSinceSample = 0;
}

/** Whether a message to be written now should wait for the end of the turn (deferWrite) rather than be written at once. */
export function writesWait(): boolean {
  messagesSinceSample++;
  if (sampler === undefined) {
    lastLoop = performance.eventLoopUtilization();
    runDelay ??= new RunDelay();
    runDelay.share();
    sampler = setInterval(sampleLoop, LOOP_SAMPLE_MS).unref();
  }
  return workerBusy || alwaysWait;
}

/** Whether a socket kept the bytes of a message written since the last writeAll (the kernel took part). */
let kept = false;
/** Told when every message has been written, and whether a socket kept one's bytes. */
const turnListeners: ((bytesKept: boolean) => void)[] = [];

/** `listener(bytesKept)` runs each time every waiting message has been written (see HeadBytes). */
export function afterWrites(listener: (bytesKept: boolean) => void): void {
  turnListeners.push(listener);
}

/**
 * Writes `bytes` to `socket` once the turn's callbacks have run. The caller leaves them
 * unchanged until afterWrites' listeners run, and longer if a socket kept them.
 */
export function deferWrite(socket: Socket, bytes: Buffer): void {
  const s = socket as DeferringSocket;
  s[kDeferred] = (s[kDeferred] ?? 0) + 1;
  pending[pendingEnd++] = socket;
  pending[pendingEnd++] = bytes;
  if (!scheduled) {
    scheduled = true;
    setImmediate(writeAll);
  }
}

/** Whether messages wait for the end of the turn (the worker busy, or tests). */
export function workerIsBusy(): boolean {
  return workerBusy || alwaysWait;
}

/** Reads the run delay from `path` from now on (tests; a missing file: none). */
export function useRunDelayFile(path: string): void {
  runDelay?.close();
  runDelay = new RunDelay(path);
  runDelay.share();
}

/** Sets whether the worker counts as busy, until the next sample; `always` makes messages always wait (tests). */
export function setWorkerBusy(busy: boolean, always = alwaysWait): void {
  workerBusy = busy;
  alwaysWait = always;
}

/** Whether `socket` holds messages not yet written. */
export function hasDeferred(socket: Socket): boolean {
  return ((socket as DeferringSocket)[kDeferred] ?? 0) > 0;
}

/** Writes `socket`'s deferred messages now: before anything else writes to, ends or destroys it. */
export function settle(socket: Socket): void {
  const s = socket as DeferringSocket;
  if ((s[kDeferred] ?? 0) === 0) return;
  s[kDeferred] = 0;
  for (let i = 0; i < pendingEnd; i += 2) {
    if (pending[i] !== socket) continue;
    const bytes = pending[i + 1] as Buffer;
    pending[i] = null;
    pending[i + 1] = null;
    write(socket, bytes);
  }
}

/** Writes every waiting message now, in order (at the end of the turn, or early when their buffer is full). */
export function writeAll(): void {
  scheduled = false;
  for (let i = 0; i < pendingEnd; i += 2) {
    const socket = pending[i] as Socket | null;
    if (socket === null) continue;
    const bytes = pending[i + 1] as Buffer;
    pending[i] = null;
    pending[i + 1] = null;
    (socket as DeferringSocket)[kDeferred] = 0;
    write(socket, bytes);
  }
  pendingEnd = 0;
  const bytesKept = kept;
  kept = false;
  for (const listener of turnListeners) listener(bytesKept);
}

function write(socket: Socket, bytes: Buffer): void {
  // A socket destroyed meanwhile drops its bytes, as a destroyed socket drops its queue.
  if (socket.destroyed) return;
  if (socket.writableLength === 0) {
    const direct = writeDirect(socket, bytes);
    if (direct === WRITTEN) return;
    if (direct === QUEUED) {
      kept = true;
      return;
    }
  }
  socket.write(bytes);
  if (socket.writableLength !== 0) kept = true;
}
