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
// against 2.67 ms (bench/run.ts --variant-env, 2026-11-29 23:41-23:44). A response waits
// for the rest of its turn's callbacks, a few µs each. While the loop has time to spare,
// at most about 30 µs: once the oldest has waited that long, the next head built writes
// them all (waitedLongEnough), so that below saturation the reader's core works beside
// this one rather than after it.
//
// The order of bytes on a socket must stay the order they were given in, so anything that
// writes to, ends or destroys a socket that may hold a deferred message calls settle(socket)
// first: it writes that socket's messages now.
import type { Socket } from 'node:net';
import { QUEUED, WRITTEN, writeDirect } from './direct-write.ts';

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
/** When the oldest waiting message was given (performance.now(), ms). */
let oldestAt = 0;
/**
 * How long the oldest message may wait before the next head built writes every waiting one
 * (HeadBytes.begin), while the loop has time to spare. Below saturation a turn's first
 * messages then go out while the rest are handled, so the reader's core works beside this
 * one: p99 as when writing at once (2.38 against 2.36 ms at 17k req/s, 2026-11-30 01:13).
 */
export const DEFAULT_WAIT_BUDGET_MS = 0.03;
let waitBudgetMs = DEFAULT_WAIT_BUDGET_MS;
/**
 * Whether the loop was busy through the last sample (LOOP_BUSY of it running callbacks).
 * Then messages wait for the end of the turn whatever their age: at saturation, whole
 * turns written together saved 13-20% of the requests' cost, where a 30 µs budget saved
 * 7% and lost 9% against the end of the turn in the same rounds.
 */
let loopBusy = false;
const LOOP_SAMPLE_MS = 20;
const LOOP_BUSY = 0.9;
/** Sampling runs while messages are written, and stops after a sample without any: an idle process is not woken 50 times a second. */
let sampler: NodeJS.Timeout | undefined;
let lastLoop = performance.eventLoopUtilization();
let turnsSinceSample = 0;

function sampleLoop(): void {
  const now = performance.eventLoopUtilization();
  loopBusy = performance.eventLoopUtilization(now, lastLoop).utilization >= LOOP_BUSY;
  lastLoop = now;
  if (turnsSinceSample === 0) {
    clearInterval(sampler);
    sampler = undefined;
    loopBusy = false;
  }
  turnsSinceSample = 0;
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
  if (pendingEnd === 0) oldestAt = performance.now();
  pending[pendingEnd++] = socket;
  pending[pendingEnd++] = bytes;
  if (!scheduled) {
    scheduled = true;
    setImmediate(writeAll);
    turnsSinceSample++;
    if (sampler === undefined) {
      lastLoop = performance.eventLoopUtilization();
      sampler = setInterval(sampleLoop, LOOP_SAMPLE_MS).unref();
    }
  }
}

/** Whether the oldest waiting message has waited past the budget, the loop not busy: the next head writes them all first. */
export function waitedLongEnough(): boolean {
  return !loopBusy && pendingEnd !== 0 && performance.now() - oldestAt > waitBudgetMs;
}

/** Sets how long, in ms, the oldest message may wait (tests: Infinity waits for the turn's end, 0 writes at each head). */
export function setWaitBudget(ms: number): void {
  waitBudgetMs = ms;
}

/** Whether the last sample found the loop busy. */
export function loopIsBusy(): boolean {
  return loopBusy;
}

/** Sets whether the loop counts as busy, until the next sample (tests). */
export function setLoopBusy(busy: boolean): void {
  loopBusy = busy;
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
