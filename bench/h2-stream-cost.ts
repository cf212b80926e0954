// What node:http2's per-stream objects cost, against portico's own HTTP/1.1 server,
// on a trivial server that answers "ok" (no proxying): decides which node:http2 API
// the HTTP/2 front end uses (issue 11).
//
//   node bench/h2-stream-cost.ts [--duration S] [--streams N] [--h2-load CxM] [--h1-connections N]
//                                [--kinds http1,h2-core,h2-compat,h2-own] [--rounds N]
//
// For each server kind (portico HTTP/1.1, node:http2 core 'stream' API, node:http2
// compatibility 'request' API, 'h2-own': portico's own frame reader and HPACK decoder
// on a raw socket, the spike that decided whether an own engine is worth it (no heap
// figure for it), and 'h2-front': portico's HTTP/2 front end as it serves, engine and
// Http2Request/Http2Response), in a child process pinned to core 0 when possible,
// kinds alternating within each of --rounds:
//  - CPU per request: h2load (Debian package nghttp2-client) on core 1 for S seconds
//    (default 5, at most 10): 50 connections for HTTP/1.1 (--h1-connections), 4
//    connections x 50 streams for h2 (--h2-load 4x50; the proxy benches use 10x10, where
//    each read and write of a connection carries fewer streams); the child's
//    user+system CPU time divided by the requests answered.
//  - heap per open request: N (default 1000) requests the server holds unanswered,
//    as N HTTP/1.1 connections or as N streams on one h2 connection; heapUsed after
//    a full GC, before and after, divided by N.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { canPin, pinned } from './lib/processes.ts';
import { CLIENT_PREFACE, Flag, FrameReader, FrameType, Setting, writeFrameHeader } from '../src/http2/wire/frames.ts';
import { HeaderBlock, HpackDecoder } from '../src/http2/wire/hpack.ts';

type Kind = 'http1' | 'h2-core' | 'h2-compat' | 'h2-own' | 'h2-front';
const KINDS: readonly Kind[] = ['http1', 'h2-core', 'h2-compat', 'h2-own', 'h2-front'];

interface Stats {
  cpuMicros: number;
  heapUsed: number;
  answered: number;
  held: number;
}

// ---------------- the server (child process) ----------------

async function serve(kind: Kind): Promise<void> {
  const body = Buffer.from('ok');
  let answered = 0;
  let hold = false;
  const held: unknown[] = [];
  let server: net.Server;
  // portico's own servers (HTTP/1.1 and the HTTP/2 front) take the same handler.
  const answerOk = (req: unknown, res: { writeHead(status: number, headers: string[]): unknown; end(chunk: Buffer): unknown }): void => {
    if (hold) {
      held.push(req, res);
      return;
    }
    answered++;
    res.writeHead(200, ['content-type', 'text/plain', 'content-length', '2']);
    res.end(body);
  };
  if (kind === 'http1') {
    const { Http1Server, createHttp1Listener } = await import('../src/http1/server.ts');
    const http1 = new Http1Server(
      answerOk,
      { headerTimeout: 60_000, requestTimeout: 0, idleTimeout: 60_000 },
    );
    server = createHttp1Listener(http1);
  } else if (kind === 'h2-front') {
    const { Http2Front } = await import('../src/http2/server.ts');
    const front = new Http2Front(
      answerOk,
      { idleTimeout: 60_000, maxHeaders: 100 },
    );
    server = net.createServer(front.accept);
  } else if (kind === 'h2-own') {
    server = net.createServer((socket) => ownEngineConnection(socket, held, () => hold, () => answered++));
  } else {
    const h2 = http2.createServer({ settings: { maxConcurrentStreams: 5000 }, maxSessionMemory: 1000 });
    if (kind === 'h2-core') {
      h2.on('stream', (stream, _headers) => {
        if (hold) {
          held.push(stream);
          return;
        }
        answered++;
        stream.respond({ ':status': 200, 'content-type': 'text/plain', 'content-length': '2' });
        stream.end(body);
      });
    } else {
      h2.on('request', (req, res) => {
        if (hold) {
          held.push(req, res);
          return;
        }
        answered++;
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
        res.end(body);
      });
    }
    server = h2;
  }
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on('message', (msg: { cmd: string }) => {
    if (msg.cmd === 'hold') hold = true;
    if (msg.cmd === 'stats' || msg.cmd === 'hold') {
      globalThis.gc!();
      globalThis.gc!();
      const cpu = process.cpuUsage();
      const stats: Stats = { cpuMicros: cpu.user + cpu.system, heapUsed: process.memoryUsage().heapUsed, answered, held: kind === 'http1' || kind === 'h2-compat' || kind === 'h2-front' ? held.length / 2 : held.length };
      process.send!(stats);
    }
  });
}

/**
 * The spike of an own HTTP/2 engine (issue 11): portico's frame reader and HPACK decoder
 * on a raw socket, h2c only, answering "ok" to each HEADERS; whatever one read asks for
 * goes out in one socket write. No flow control beyond re-opening the connection
 * window (GET requests carry no DATA), no validation: what the engine's floor costs.
 */
function ownEngineConnection(socket: net.Socket, held: unknown[], holding: () => boolean, count: () => void): void {
  const reader = new FrameReader();
  const decoder = new HpackDecoder();
  const settings = Buffer.alloc(9 + 6);
  writeFrameHeader(settings, 0, 6, FrameType.SETTINGS, 0, 0);
  settings.writeUInt16BE(Setting.MAX_CONCURRENT_STREAMS, 9);
  settings.writeUInt32BE(5000, 11);
  socket.write(settings);
  const head = new HeaderBlock().status(200).add('content-type', 'text/plain').add('content-length', '2');
  const answerLength = 9 + head.length + 9 + 2;
  let prefaceLeft = CLIENT_PREFACE.length;
  let out: Buffer[] = [];
  const fields: string[] = [];
  const sink = {
    frame(type: number, flags: number, streamId: number, buf: Buffer, start: number, end: number): void {
      if (type === FrameType.SETTINGS && (flags & Flag.ACK) === 0) {
        const ack = Buffer.alloc(9);
        writeFrameHeader(ack, 0, 0, FrameType.SETTINGS, Flag.ACK, 0);
        out.push(ack);
      } else if (type === FrameType.HEADERS) {
        fields.length = 0;
        decoder.decode(buf, start, end, fields, 32 * 1024);
        if (holding()) {
          held.push(streamId);
          return;
        }
        count();
        const answer = Buffer.allocUnsafe(answerLength);
        let pos = writeFrameHeader(answer, 0, head.length, FrameType.HEADERS, Flag.END_HEADERS, streamId);
        pos = head.writeTo(answer, pos);
        pos = writeFrameHeader(answer, pos, 2, FrameType.DATA, Flag.END_STREAM, streamId);
        answer[pos] = 0x6f;
        answer[pos + 1] = 0x6b;
        out.push(answer);
      } else if (type === FrameType.PING && (flags & Flag.ACK) === 0) {
        const pong = Buffer.alloc(17);
        writeFrameHeader(pong, 0, 8, FrameType.PING, Flag.ACK, 0);
        buf.copy(pong, 9, start, end);
        out.push(pong);
      }
    },
    frameTooLarge(): void {
      socket.destroy();
    },
  };
  socket.on('data', (chunk: Buffer) => {
    if (prefaceLeft > 0) {
      const n = Math.min(prefaceLeft, chunk.length);
      prefaceLeft -= n;
      chunk = chunk.subarray(n);
    }
    reader.push(chunk, sink);
    if (out.length === 0) return;
    socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
    out = [];
  });
  socket.on('error', () => socket.destroy());
}

// ---------------- the driver ----------------

function request<T>(child: ChildProcess, cmd: string): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m as T));
    child.send({ cmd });
  });
}

async function startServer(kind: Kind): Promise<{ child: ChildProcess; port: number }> {
  const self = fileURLToPath(import.meta.url);
  const [cmd, args] = pinned(0, process.execPath, ['--expose-gc', self, '--serve', kind]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port } = await new Promise<{ port: number }>((resolve) => child.once('message', (m) => resolve(m as { port: number })));
  return { child, port };
}

/** h2load's load: HTTP/1.1 connections, and h2 connections x streams each. */
const load = { h1Connections: 50, h2Connections: 4, h2Streams: 50 };

function h2load(kind: Kind, port: number, seconds: number): void {
  const base = ['-D', String(seconds), `http://127.0.0.1:${port}/`];
  const args = kind === 'http1' ? ['--h1', '-c', String(load.h1Connections), '-m', '1', ...base] : ['-c', String(load.h2Connections), '-m', String(load.h2Streams), ...base];
  const [cmd, argv] = pinned(1, 'h2load', args);
  const out = spawnSync(cmd, argv, { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`h2load failed: ${out.stderr || out.stdout}`);
}

/** Opens `n` requests the server holds: n HTTP/1.1 connections, or n streams on one h2 connection. */
async function openHeld(kind: Kind, port: number, n: number): Promise<() => void> {
  if (kind === 'http1') {
    const sockets: net.Socket[] = [];
    for (let i = 0; i < n; i++) {
      const socket = net.connect(port, '127.0.0.1');
      socket.write('GET / HTTP/1.1\r\nHost: bench\r\n\r\n');
      sockets.push(socket);
    }
    await Promise.all(sockets.map((s) => new Promise((r) => s.once('connect', r))));
    return () => sockets.forEach((s) => s.destroy());
  }
  const session = http2.connect(`http://127.0.0.1:${port}`, { peerMaxConcurrentStreams: n + 10 });
  await new Promise((r) => session.once('remoteSettings', r));
  for (let i = 0; i < n; i++) session.request({ ':path': '/' }).on('error', () => {});
  return () => session.destroy();
}

async function measure(kind: Kind, seconds: number, streams: number): Promise<{ cpuPerRequest: number; rps: number; heapPerHeld: number }> {
  const { child, port } = await startServer(kind);
  try {
    h2load(kind, port, 1); // warm-up
    const before = await request<Stats>(child, 'stats');
    h2load(kind, port, seconds);
    const after = await request<Stats>(child, 'stats');
    const answered = after.answered - before.answered;
    await request<Stats>(child, 'hold');
    const idle = await request<Stats>(child, 'stats');
    const close = await openHeld(kind, port, streams);
    let holding = idle;
    for (let i = 0; i < 100 && holding.held < streams; i++) {
      await new Promise((r) => setTimeout(r, 50));
      holding = await request<Stats>(child, 'stats');
    }
    close();
    return {
      cpuPerRequest: (after.cpuMicros - before.cpuMicros) / answered,
      rps: answered / seconds,
      heapPerHeld: (holding.heapUsed - idle.heapUsed) / holding.held,
    };
  } finally {
    child.kill();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      serve: { type: 'string' },
      duration: { type: 'string', default: '5' },
      streams: { type: 'string', default: '1000' },
      'h2-load': { type: 'string', default: '4x50' },
      'h1-connections': { type: 'string', default: '50' },
      kinds: { type: 'string', default: KINDS.join(',') },
      rounds: { type: 'string', default: '1' },
    },
  });
  if (values.serve !== undefined) {
    await serve(values.serve as Kind);
    return;
  }
  const h2Load = /^(\d+)x(\d+)$/.exec(values['h2-load']);
  if (h2Load === null) throw new Error(`--h2-load: expected connections x streams (e.g. 10x10), got ${JSON.stringify(values['h2-load'])}`);
  load.h2Connections = Number(h2Load[1]);
  load.h2Streams = Number(h2Load[2]);
  load.h1Connections = Number(values['h1-connections']);
  const seconds = Math.min(10, Number(values.duration));
  const streams = Number(values.streams);
  if (!canPin()) console.log('(not pinned: taskset or a second core missing)');
  console.log(`load: h1 ${load.h1Connections} connections, h2 ${load.h2Connections} connections x ${load.h2Streams} streams`);
  console.log(`kind        req/s     CPU µs/request   heap bytes/open request (${streams} open)`);
  const kinds = values.kinds.split(',').map((k) => k.trim());
  for (const k of kinds) if (!(KINDS as readonly string[]).includes(k)) throw new Error(`--kinds: expected some of ${KINDS.join(',')}, got ${JSON.stringify(k)}`);
  // Kinds alternate within a round, so the machine's other load hits each alike.
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const kind of kinds as Kind[]) {
      const r = await measure(kind, seconds, streams);
      console.log(`${kind.padEnd(10)}  ${r.rps.toFixed(0).padStart(7)}   ${r.cpuPerRequest.toFixed(1).padStart(14)}   ${kind === 'h2-own' ? '       n/a' : r.heapPerHeld.toFixed(0).padStart(10)}`);
    }
  }
}

await main();
