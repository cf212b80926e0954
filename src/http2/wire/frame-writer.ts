// Frames out, for one connection: small frames (and small payloads) are written one
// after the other into a slab, large payloads are queued as they are, and flush() hands
// everything queued to the socket in one write (writev when there are several buffers).
// A slab is never written over once part of it was queued: later frames go after it.
import type { Socket } from 'node:net';
import { FRAME_HEADER, Flag, FrameType, writeFrameHeader } from './frames.ts';
import type { HeaderBlock } from './hpack.ts';

/** Payloads up to this size are copied next to their frame header (one buffer per write). */
const COPY_LIMIT = 2048;
const SLAB = 16 * 1024;

export class FrameWriter {
  private readonly socket: Socket;
  /** Called when something is queued: the connection decides when to flush. */
  private readonly queued: () => void;
  private out: Buffer[] = [];
  private slab: Buffer = Buffer.allocUnsafe(SLAB);
  private slabStart = 0;
  private slabEnd = 0;
  /** Bytes queued and not yet handed to the socket. */
  pendingBytes = 0;
  /** The peer's SETTINGS_MAX_FRAME_SIZE. */
  maxFrame = 16_384;

  constructor(socket: Socket, queued: () => void) {
    this.socket = socket;
    this.queued = queued;
  }

  /** Room in the slab for `n` bytes; returns where they go. */
  private reserve(n: number): number {
    if (this.slabEnd + n > this.slab.length) {
      this.seal();
      this.slab = Buffer.allocUnsafe(Math.max(SLAB, n));
      this.slabStart = 0;
      this.slabEnd = 0;
    }
    const pos = this.slabEnd;
    this.slabEnd += n;
    this.pendingBytes += n;
    this.queued();
    return pos;
  }

  private seal(): void {
    if (this.slabEnd > this.slabStart) {
      this.out.push(this.slab.subarray(this.slabStart, this.slabEnd));
      this.slabStart = this.slabEnd;
    }
  }

  /** A buffer that is already frames (our SETTINGS). */
  raw(buf: Buffer): void {
    this.seal();
    this.out.push(buf);
    this.pendingBytes += buf.length;
    this.queued();
  }

  /** Writes everything queued to the socket. */
  flush(): void {
    this.seal();
    const out = this.out;
    if (out.length === 0) return;
    this.out = [];
    this.pendingBytes = 0;
    const socket = this.socket;
    if (socket.destroyed) return;
    if (out.length === 1) {
      socket.write(out[0]!);
      return;
    }
    socket.cork();
    for (const buf of out) socket.write(buf);
    socket.uncork();
  }

  headers(id: number, block: HeaderBlock, endStream: boolean): void {
    const length = block.length;
    const endFlag = endStream ? Flag.END_STREAM : 0;
    if (length <= this.maxFrame) {
      const pos = this.reserve(FRAME_HEADER + length);
      writeFrameHeader(this.slab, pos, length, FrameType.HEADERS, Flag.END_HEADERS | endFlag, id);
      block.writeTo(this.slab, pos + FRAME_HEADER);
      return;
    }
    // A head larger than one frame: HEADERS, then CONTINUATION frames.
    const whole = Buffer.allocUnsafe(length);
    block.writeTo(whole, 0);
    for (let at = 0; at < length; at += this.maxFrame) {
      const part = Math.min(this.maxFrame, length - at);
      const last = at + part >= length;
      const pos = this.reserve(FRAME_HEADER + part);
      writeFrameHeader(this.slab, pos, part, at === 0 ? FrameType.HEADERS : FrameType.CONTINUATION, (at === 0 ? endFlag : 0) | (last ? Flag.END_HEADERS : 0), id);
      whole.copy(this.slab, pos + FRAME_HEADER, at, at + part);
    }
  }

  /** DATA frames for `chunk`, END_STREAM on the last when `end`. */
  data(id: number, chunk: Buffer, end: boolean): void {
    let at = 0;
    do {
      const part = Math.min(this.maxFrame, chunk.length - at);
      const flags = at + part >= chunk.length && end ? Flag.END_STREAM : 0;
      if (part <= COPY_LIMIT) {
        const pos = this.reserve(FRAME_HEADER + part);
        writeFrameHeader(this.slab, pos, part, FrameType.DATA, flags, id);
        chunk.copy(this.slab, pos + FRAME_HEADER, at, at + part);
      } else {
        const pos = this.reserve(FRAME_HEADER);
        writeFrameHeader(this.slab, pos, part, FrameType.DATA, flags, id);
        this.raw(at === 0 && part === chunk.length ? chunk : chunk.subarray(at, at + part));
      }
      at += part;
    } while (at < chunk.length);
  }

  settingsAck(): void {
    const pos = this.reserve(FRAME_HEADER);
    writeFrameHeader(this.slab, pos, 0, FrameType.SETTINGS, Flag.ACK, 0);
  }

  pingAck(payload: Buffer, start: number): void {
    const pos = this.reserve(FRAME_HEADER + 8);
    writeFrameHeader(this.slab, pos, 8, FrameType.PING, Flag.ACK, 0);
    payload.copy(this.slab, pos + FRAME_HEADER, start, start + 8);
  }

  goaway(lastStreamId: number, code: number): void {
    const pos = this.reserve(FRAME_HEADER + 8);
    writeFrameHeader(this.slab, pos, 8, FrameType.GOAWAY, 0, 0);
    this.slab.writeUInt32BE(lastStreamId, pos + FRAME_HEADER);
    this.slab.writeUInt32BE(code, pos + FRAME_HEADER + 4);
  }

  windowUpdate(id: number, increment: number): void {
    const pos = this.reserve(FRAME_HEADER + 4);
    writeFrameHeader(this.slab, pos, 4, FrameType.WINDOW_UPDATE, 0, id);
    this.slab.writeUInt32BE(increment, pos + FRAME_HEADER);
  }

  reset(id: number, code: number): void {
    const pos = this.reserve(FRAME_HEADER + 4);
    writeFrameHeader(this.slab, pos, 4, FrameType.RST_STREAM, 0, id);
    this.slab.writeUInt32BE(code, pos + FRAME_HEADER);
  }
}
