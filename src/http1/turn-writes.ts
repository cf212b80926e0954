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
// for the rest of its turn's callbacks, a few µs each, and at most about 30 µs: once the
// oldest has waited that long, the next head built writes them all (waitedLongEnough).
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
 * (HeadBytes.begin). Below saturation a turn's first messages then go out while the rest
 * are handled, so the reader's core works beside this one; at saturation, whole turns'
 * worth still go out together. Measured once (2026-11-30 01:13-01:19): at 17k req/s, p99
 * as when writing at once (2.38 against 2.36 ms), where waiting for the end of the turn had
 * it 2.40-2.75 against 2.04-2.33; at saturation, 6.6% more requests than writing at once.
 */
export const DEFAULT_WAIT_BUDGET_MS = 0.03;
let waitBudgetMs = DEFAULT_WAIT_BUDGET_MS;
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
  }
}

/** Whether the oldest waiting message has waited past the budget: the next head writes them all first. */
export function waitedLongEnough(): boolean {
  return pendingEnd !== 0 && performance.now() - oldestAt > waitBudgetMs;
}

/** Sets how long, in ms, the oldest message may wait (tests: Infinity waits for the turn's end, 0 writes at each head). */
export function setWaitBudget(ms: number): void {
  waitBudgetMs = ms;
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
