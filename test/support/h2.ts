// HTTP/2 clients for the tests: node:http2 sessions (h2 over TLS with ALPN, or h2c with
// prior knowledge) and a tiny frame encoder for what node:http2 refuses to send.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startEchoServer, type EchoReply } from '../../examples/echo-server.ts';
import { startPortico, type PorticoProcess } from './portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from './objects.ts';
import http2, { type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';

export interface H2Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text(): string;
  json(): Record<string, any>;
}

/** An h2c session (prior knowledge) to the plain port, or h2 over TLS (ALPN) to the TLS port. */
export function h2Connect(port: number, secure: boolean, options: http2.ClientSessionOptions & tls.ConnectionOptions = {}): Promise<ClientHttp2Session> {
  const session = secure
    ? http2.connect(`https://127.0.0.1:${port}`, { rejectUnauthorized: false, servername: 'h2.test', ...options })
    : http2.connect(`http://127.0.0.1:${port}`, options);
  return new Promise((resolve, reject) => {
    session.once('remoteSettings', () => resolve(session));
    session.once('error', reject);
  });
}

/** One request on `session`; `body` is sent as is (a Buffer) or not at all. */
export function h2Request(session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: Buffer): Promise<H2Reply> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': body === undefined ? 'GET' : 'POST', ...headers }, { endStream: body === undefined });
    const chunks: Buffer[] = [];
    let head: IncomingHttpHeaders = {};
    stream.on('response', (h) => (head = h));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const buf = Buffer.concat(chunks);
      resolve({
        status: Number(head[':status']),
        headers: head,
        body: buf,
        text: () => buf.toString('utf8'),
        json: () => JSON.parse(buf.toString('utf8')) as Record<string, any>,
      });
    });
    stream.on('error', reject);
    if (body !== undefined) stream.end(body);
  });
}

// ---- raw frames (RFC 9113 section 4.1) ----

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const FLAG = { END_STREAM: 1, ACK: 1, END_HEADERS: 4 } as const;

export function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

/** HPACK "literal header field without indexing, new name" (RFC 7541 section 6.2.2), no Huffman: any bytes go. */
export function hpack(fields: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  const str = (s: string) => {
    const bytes = Buffer.from(s, 'latin1');
    if (bytes.length >= 127) throw new Error('test strings stay under 127 bytes');
    return Buffer.concat([Buffer.from([bytes.length]), bytes]);
  };
  for (const [name, value] of fields) parts.push(Buffer.from([0x00]), str(name), str(value));
  return Buffer.concat(parts);
}

/** One HTTP/2 frame as RawH2 parsed it. */
export interface RawFrame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/**
 * The frames a peer sent, parsed as they arrive: a raw client (open) toward portico's
 * front, or a raw pod (accept) under portico's HTTP/2 client.
 */
export class RawH2 {
  readonly socket: net.Socket;
  readonly frames: RawFrame[] = [];
  closed = false;
  private buffered = Buffer.alloc(0);
  private waiters: (() => void)[] = [];

  private constructor(socket: net.Socket, o: { ackSettings: boolean; clientPreface?: boolean; onFrame?: (raw: RawH2, f: RawFrame) => void }) {
    this.socket = socket;
    let prefaceDue = o.clientPreface === true;
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      if (prefaceDue) {
        if (this.buffered.length < PREFACE.length) return;
        assert.deepEqual(this.buffered.subarray(0, PREFACE.length), PREFACE, 'the client preface comes first');
        prefaceDue = false;
        this.buffered = this.buffered.subarray(PREFACE.length);
      }
      while (this.buffered.length >= 9) {
        const length = this.buffered.readUIntBE(0, 3);
        if (this.buffered.length < 9 + length) break;
        const f = { type: this.buffered[3]!, flags: this.buffered[4]!, streamId: this.buffered.readUInt32BE(5) & 0x7fffffff, payload: this.buffered.subarray(9, 9 + length) };
        this.buffered = this.buffered.subarray(9 + length);
        this.frames.push(f);
        // Settle the handshake as a client must.
        if (o.ackSettings && f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0) socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
        o.onFrame?.(this, f);
      }
      this.wake();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  /** A pod's side of a connection portico's client opened: checks the client preface first and sends the server's SETTINGS (it acknowledges none); `onFrame` sees each frame as it arrives. */
  static accept(socket: net.Socket, onFrame: (raw: RawH2, f: RawFrame) => void): RawH2 {
    const raw = new RawH2(socket, { ackSettings: false, clientPreface: true, onFrame });
    socket.write(frame(FRAME.SETTINGS, 0, 0));
    return raw;
  }

  /** Connects (TLS with ALPN h2 when `secure`), sends the preface and empty SETTINGS; `ackSettings: false` leaves the peer's SETTINGS unacknowledged. */
  static async open(port: number, secure: boolean, { ackSettings = true } = {}): Promise<RawH2> {
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s: net.Socket = secure
        ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['h2'], servername: 'h2.test' }, () => resolve(s))
        : net.connect(port, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
    const raw = new RawH2(socket, { ackSettings });
    socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0)]));
    return raw;
  }

  write(...frames: Buffer[]): void {
    if (!this.socket.destroyed) this.socket.write(Buffer.concat(frames));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Resolves with the first frame (past or future) that matches, or undefined once the connection closed without one. */
  async waitFor(pred: (f: RawFrame) => boolean, timeoutMs = 5000): Promise<RawFrame | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(pred);
      if (found !== undefined || this.closed) return found;
      if (Date.now() > deadline) throw new Error('no such frame in time');
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  /** Resolves once the peer closed the connection (rejects after `timeoutMs`). */
  async untilClosed(timeoutMs = 10_000): Promise<void> {
    await this.waitFor(() => false, timeoutMs);
  }

  close(): void {
    this.socket.destroy();
  }
}

/**
 * portico through the CLI in front of one echo pod serving web.local, for the raw-frame
 * suites: registers the suite's before() and after() (portico must exit 0 on SIGTERM).
 * `seen` holds every request the pod received.
 */
export function webLocalBehindPortico(): { readonly portico: PorticoProcess; readonly seen: EchoReply[] } {
  const dir = new ManifestDir();
  const seen: EchoReply[] = [];
  let portico: PorticoProcess | undefined;
  let web: Awaited<ReturnType<typeof startEchoServer>> | undefined;
  before(async () => {
    web = await startEchoServer({ name: 'web', onRequest: (r) => seen.push(r) });
    dir.write('class.yaml', [ingressClass('portico')]);
    dir.write('web.yaml', [ingress('web', { rules: [{ host: 'web.local', paths: [{ path: '/', service: 'web' }] }] }), ...serviceWithEndpoints('web', [web.port])]);
    portico = await startPortico(['--manifests', dir.path]);
  });
  after(async () => {
    assert.equal(await portico?.stop(), 0, 'exits 0 on SIGTERM');
    await web?.close();
    dir.cleanup();
  });
  return {
    get portico() {
      if (portico === undefined) throw new Error('portico is not started yet (use it inside a test)');
      return portico;
    },
    seen,
  };
}
