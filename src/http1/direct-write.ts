// Writes to a plain TCP socket straight through its libuv handle, when nothing else is
// queued on it: the kernel almost always takes a head (and the small body behind it)
// whole, and then net.Socket's Writable bookkeeping is pure garbage. A socket.write makes
// a WriteWrap with six properties, an after-write record and a nextTick entry: about
// 400 bytes a write, two writes a proxied request, about an eighth of all it allocates,
// and those bytes set how often the young generation is collected (each collection holds
// up every request in flight). Here one request object serves every write that completes
// at once.
//
// When the kernel takes only part, libuv keeps the rest queued and finishes it in order
// ahead of any later write; the socket is marked until then, so later writes go through
// socket.write (which queues behind it), and 'drain' is emitted when it is done: the
// caller got false, as from socket.write. This uses Node's stream_wrap binding (as
// net.Socket does); without it every write goes through socket.write. process.binding
// is deprecated in documentation only: with --pending-deprecation Node warns once
// (DEP0111) when this module loads.
import type { Socket } from 'node:net';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { getSystemErrorName } = process.getBuiltinModule('node:util');

interface WriteReq {
  handle: unknown;
  oncomplete: (this: WriteReq, status: number) => void;
  async: boolean;
  bytes: number;
  buffer: Buffer | null;
  callback: null;
  socket: Socket | null;
}
interface StreamHandle {
  writeBuffer(req: WriteReq, data: Buffer): number;
}
type HandleSocket = Socket & { _handle?: StreamHandle | null; [kPending]?: boolean };

const kPending = Symbol('portico.directWritePending');

const binding = streamWrap();
const state: Int32Array | undefined = binding?.streamBaseState;
const ASYNC = binding?.kLastWriteWasAsync ?? 0;
let spare: WriteReq | null = null;

function streamWrap(): { WriteWrap: new () => WriteReq; streamBaseState: Int32Array; kLastWriteWasAsync: number } | undefined {
  try {
    const b = (process as unknown as { binding(name: string): Record<string, unknown> }).binding('stream_wrap');
    if (typeof b.WriteWrap !== 'function' || !(b.streamBaseState instanceof Int32Array) || typeof b.kLastWriteWasAsync !== 'number') return undefined;
    return b as unknown as { WriteWrap: new () => WriteReq; streamBaseState: Int32Array; kLastWriteWasAsync: number };
  } catch {
    return undefined;
  }
}

/** Written whole: `data` is free again. */
export const WRITTEN = 1;
/** The kernel took part: libuv holds `data` until the rest is written, then the socket emits 'drain'. */
export const QUEUED = 0;
/** Not possible here (no binding, socket busy, closing or not connected): use socket.write. */
export const NOT_DIRECT = -1;

/** Writes `data` to plain TCP `socket` directly if nothing is queued on it (see above). */
export function writeDirect(socket: Socket, data: Buffer): number {
  const s = socket as HandleSocket;
  const handle = s._handle;
  if (state === undefined || handle == null || s[kPending] === true || socket.connecting || socket.destroyed || !socket.writable) return NOT_DIRECT;
  const req = spare ?? newReq();
  spare = null;
  req.handle = handle;
  const err = handle.writeBuffer(req, data);
  if (err !== 0) {
    req.handle = null;
    spare = req;
    socket.destroy(writeError(err));
    return WRITTEN;
  }
  if (state[ASYNC] === 0) {
    req.handle = null;
    spare = req;
    return WRITTEN;
  }
  req.buffer = data;
  req.socket = socket;
  s[kPending] = true;
  return QUEUED;
}

function newReq(): WriteReq {
  const req = new binding!.WriteWrap();
  req.handle = null;
  req.oncomplete = onWriteComplete;
  req.async = false;
  req.bytes = 0;
  req.buffer = null;
  req.callback = null;
  req.socket = null;
  return req;
}

function onWriteComplete(this: WriteReq, status: number): void {
  const socket = this.socket as HandleSocket;
  this.socket = null;
  this.buffer = null;
  this.handle = null;
  socket[kPending] = false;
  if (status < 0) socket.destroy(writeError(status));
  else if (!socket.destroyed) socket.emit('drain');
}

function writeError(status: number): Error {
  const code = getSystemErrorName(status);
  return Object.assign(new Error(`write ${code}`), { code, errno: status, syscall: 'write' });
}
