// HTTP/2 frames (RFC 9113 section 4 and 6): the numbers, the 9-byte header, and a
// reader that cuts a connection's bytes into whole frames without copying the ones
// that arrived whole.

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

export const FRAME_HEADER = 9;
export const DEFAULT_MAX_FRAME_SIZE = 16_384;
export const DEFAULT_WINDOW = 65_535;
export const MAX_WINDOW = 2 ** 31 - 1;
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Writes a frame header at out[pos]; returns pos + 9. */
export function writeFrameHeader(out: Buffer, pos: number, length: number, type: number, flags: number, streamId: number): number {
  out[pos] = length >>> 16;
  out[pos + 1] = (length >>> 8) & 0xff;
  out[pos + 2] = length & 0xff;
  out[pos + 3] = type;
  out[pos + 4] = flags;
  out.writeUInt32BE(streamId & 0x7fffffff, pos + 5);
  return pos + FRAME_HEADER;
}

/** One whole frame: its payload is buf[start, end). */
export interface FrameSink {
  frame(type: number, flags: number, streamId: number, buf: Buffer, start: number, end: number): void;
  /** A frame longer than the limit (FRAME_SIZE_ERROR): nothing more is read. */
  frameTooLarge(length: number): void;
}

/**
 * Cuts bytes into frames. Frames that arrived whole are handed over as slices of the
 * chunk they came in (valid until the call returns); only a frame split across reads
 * is copied together.
 */
export class FrameReader {
  private pending: Buffer | undefined = undefined;
  /** The largest payload accepted: our SETTINGS_MAX_FRAME_SIZE. */
  maxPayload = DEFAULT_MAX_FRAME_SIZE;
  stopped = false;

  push(chunk: Buffer, sink: FrameSink): void {
    let buf = chunk;
    if (this.pending !== undefined) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = undefined;
    }
    let pos = 0;
    const end = buf.length;
    while (!this.stopped && end - pos >= FRAME_HEADER) {
      const length = (buf[pos]! << 16) | (buf[pos + 1]! << 8) | buf[pos + 2]!;
      if (length > this.maxPayload) {
        this.stopped = true;
        sink.frameTooLarge(length);
        return;
      }
      if (end - pos < FRAME_HEADER + length) break;
      const type = buf[pos + 3]!;
      const flags = buf[pos + 4]!;
      const streamId = buf.readUInt32BE(pos + 5) & 0x7fffffff;
      const start = pos + FRAME_HEADER;
      pos = start + length;
      sink.frame(type, flags, streamId, buf, start, pos);
    }
    if (!this.stopped && pos < end) this.pending = buf.subarray(pos);
  }
}
