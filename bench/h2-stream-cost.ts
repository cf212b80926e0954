// What node:http2's per-stream objects cost, against portico's own HTTP/1.1 server,
// on a trivial server that answers "ok" (no proxying): decides which node:http2 API
// the HTTP/2 front end uses (issue 11).
//
//   node bench/h2-stream-cost.ts [--duration S] [--streams N] [--h2-load CxM] [--h1-connections N]
//
// For each server kind (portico HTTP/1.1, node:http2 core 'stream' API, node:http2
// compatibility 'request' API), in a child process pinned to core 0 when possible:
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

type Kind = 'http1' | 'h2-core' | 'h2-compat';
const KINDS: readonly Kind[] = ['http1', 'h2-core', 'h2-compat'];

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
  if (kind === 'http1') {
    const { Http1Server, createHttp1Listener } = await import('../src/http1/server.ts');
    const http1 = new Http1Server(
      (req, res) => {
        if (hold) {
          held.push(req, res);
          return;
        }
        answered++;
        res.writeHead(200, ['content-type', 'text/plain', 'content-length', '2']);
        res.end(body);
      },
      { headerTimeout: 60_000, requestTimeout: 0, idleTimeout: 60_000 },
    );
    server = createHttp1Listener(http1);
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
      const stats: Stats = { cpuMicros: cpu.user + cpu.system, heapUsed: process.memoryUsage().heapUsed, answered, held: kind === 'http1' || kind === 'h2-compat' ? held.length / 2 : held.length };
      process.send!(stats);
    }
  });
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
  for (const kind of KINDS) {
    const r = await measure(kind, seconds, streams);
    console.log(`${kind.padEnd(10)}  ${r.rps.toFixed(0).padStart(7)}   ${r.cpuPerRequest.toFixed(1).padStart(14)}   ${r.heapPerHeld.toFixed(0).padStart(10)}`);
  }
}

await main();
