// RSS of portico under load and after it (issue 12: < 128 MiB per process under load):
// one route, the RSS of every portico process sampled each second, then 25 s after.
// Three shapes of load, all on loopback and bounded in time:
// - h1:   wrk, 64 keep-alive HTTP/1.1 connections, to an echo pod (a process of its own)
// - h2c:  h2load, 64 h2c connections x 10 streams, to the same echo pod (HTTP/1.1 behind)
// - grpc: h2load, 64 h2c connections x 10 streams of unary gRPC calls, through portico's
//         own HTTP/2 client to an h2c gRPC upstream (nginx answering a fixed message)
// For the process with the highest RSS it also prints where that RSS was at its peak
// sample (/proc/PID/smaps: V8's pages, malloc arenas, file-backed) and, with one
// process, V8's heap spaces then (from the admin /metrics).
// Runs the compiled JavaScript (run `npm run build` first), as the image does.
//   node_modules/.bin/node bench/rss-under-load.ts [workers=1] [loadSeconds=15]
//     [--mode h1|h2c|grpc] [--clients 64] [--streams 10] [--after 25]
//     [--node-args "--max-semi-space-size=8"] [--bin ../other/bin/portico.js] [--log FILE]
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startEchoProcess } from './lib/out-of-process.ts';
import { GRPC_HOST, GRPC_PATH, GRPC_REQUEST, grpcRouteManifests, grpcUpstreamConfig, GRPC_REPLY } from './lib/nginx.ts';
import { processRss, processTree } from './lib/processes.ts';
import { smapsBreakdown } from './lib/smaps.ts';
import { get } from '../test/support/http.ts';
import { freePort } from '../test/support/ports.ts';
import { ingress, ingressClass, serviceWithEndpoints, toYaml } from '../test/support/objects.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    mode: { type: 'string', default: 'h1' },
    clients: { type: 'string', default: '64' },
    streams: { type: 'string', default: '10' },
    after: { type: 'string', default: '25' },
    'node-args': { type: 'string', default: '' },
    bin: { type: 'string' },
    // portico's stdout (its log, and e.g. --trace-gc's lines) to this file
    log: { type: 'string' },
  },
});
const workers = positionals[0] ?? '1';
const loadSeconds = Number(positionals[1] ?? 15);
const mode = values.mode;
if (mode !== 'h1' && mode !== 'h2c' && mode !== 'grpc') throw new Error(`--mode: expected h1, h2c or grpc, got ${JSON.stringify(mode)}`);
const clients = Number(values.clients);
const streams = Number(values.streams);
const afterSeconds = Number(values.after);
const nodeArgs = values['node-args'].split(' ').filter((x) => x !== '');
const tool = mode === 'h1' ? 'wrk' : 'h2load';
if (spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0) throw new Error(`needs ${tool} (apt-get install ${mode === 'h1' ? 'wrk' : 'nghttp2-client'})`);
if (mode === 'grpc' && spawnSync('sh', ['-c', 'command -v nginx'], { stdio: 'ignore' }).status !== 0) throw new Error('--mode grpc needs nginx (apt-get install nginx) as the gRPC upstream');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = values.bin ?? join(ROOT, 'bin/portico.js');

const echo = await startEchoProcess('web');
const dir = mkdtempSync(join(tmpdir(), 'portico-rss-load-'));
chmodSync(dir, 0o755);
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
writeFileSync(join(manifests, 'web.yaml'), toYaml([ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port]), ingress('web', { rules: [{ host: 'web.local', paths: [{ path: '/', service: 'web' }] }] })]));
let grpcUpstream: ReturnType<typeof spawn> | undefined;
if (mode === 'grpc') {
  const grpcPort = await freePort();
  mkdirSync(join(dir, 'grpc-root'));
  chmodSync(join(dir, 'grpc-root'), 0o755);
  writeFileSync(join(dir, 'grpc-root', 'reply'), GRPC_REPLY);
  writeFileSync(join(dir, 'grpc-request.bin'), GRPC_REQUEST);
  writeFileSync(join(dir, 'grpc-upstream.conf'), grpcUpstreamConfig(dir, grpcPort));
  grpcUpstream = spawn('nginx', ['-p', dir, '-c', join(dir, 'grpc-upstream.conf'), '-e', join(dir, 'grpc-upstream-error.log')], { stdio: 'ignore' });
  writeFileSync(join(manifests, 'grpc.yaml'), grpcRouteManifests(grpcPort));
}
const port = await freePort();
const admin = await freePort();
const logFd = values.log === undefined ? 'ignore' : openSync(values.log, 'w');
const child = spawn(join(ROOT, 'node_modules/.bin/node'), [...nodeArgs, BIN, '--manifests', manifests, '--workers', workers, '--http-port', String(port), '--https-port', '0', '--admin-port', String(admin), '--bind', '127.0.0.1', '--access-log=false'], {
  stdio: ['ignore', logFd, 'inherit'],
  env: { ...process.env, NODE_ENV: 'production' },
});
if (typeof logFd === 'number') closeSync(logFd);

/** The load: wrk or h2load for `loadSeconds`; resolves with its requests per second. */
function load(): Promise<string> {
  const [cmd, args] =
    mode === 'h1'
      ? ['wrk', ['-t2', `-c${clients}`, `-d${loadSeconds}s`, '-H', 'Host: web.local', `http://127.0.0.1:${port}/`]]
      : mode === 'h2c'
        ? ['h2load', ['-t1', `-c${clients}`, `-m${streams}`, `-D${loadSeconds}`, '-H', ':authority: web.local', `http://127.0.0.1:${port}/`]]
        : ['h2load', ['-t1', `-c${clients}`, `-m${streams}`, `-D${loadSeconds}`, '-H', `:authority: ${GRPC_HOST}`, '-H', 'content-type: application/grpc', '-H', 'te: trailers', '-d', join(dir, 'grpc-request.bin'), `http://127.0.0.1:${port}${GRPC_PATH}`]];
  return new Promise((resolve) => {
    const p = spawn(cmd as string, args as string[], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.on('close', () => {
      const rps = /Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? /finished in [\d.]+s, ([\d.]+) req\/s/.exec(out)?.[1];
      const failed = /requests: .*?(\d+) failed, (\d+) errored/.exec(out);
      resolve(`${rps === undefined ? 'req/s unknown' : `${Math.round(Number(rps)).toLocaleString('en-US')} req/s`}${failed !== null && failed[1] !== '0' ? `, ${failed[1]} failed` : ''}`);
    });
  });
}

/** V8's heap spaces (used of size, MB) from the admin /metrics; one process only (workers report their own). */
async function heapSpaces(): Promise<string> {
  const text = await fetch(`http://127.0.0.1:${admin}/metrics`).then((r) => r.text(), () => '');
  const spaces = new Map<string, [number, number]>();
  for (const m of text.matchAll(/^nodejs_heap_space_size_(used|total)_bytes\{space="(\w+)"\} (\S+)/gm)) {
    const entry = spaces.get(m[2]!) ?? [0, 0];
    entry[m[1] === 'used' ? 0 : 1] = Number(m[3]) / 1048576;
    spaces.set(m[2]!, entry);
  }
  return [...spaces].filter(([, [, total]]) => total >= 1).map(([space, [used, total]]) => `${space} ${used.toFixed(1)}/${total.toFixed(1)}`).join(', ');
}

try {
  // Ready when it answers on the route (fetch cannot set Host).
  for (let i = 0; ; i++) {
    const ok = await get(port, 'web.local').then((r) => r.status === 200, () => false);
    if (ok) break;
    if (i > 300) throw new Error('portico did not serve web.local within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const pids = () => processTree(child.pid!).filter((pid) => processRss(pid) > 20 * 1048576);
  /** RSS of each portico process (primary first), MB. */
  const rss = () => pids().map((pid) => processRss(pid) / 1048576);
  const show = (mbs: number[]) => mbs.map((mb) => mb.toFixed(1)).join(' + ');
  await new Promise((r) => setTimeout(r, 5000));
  const shape = mode === 'h1' ? `wrk ${clients} connections` : `h2load ${clients} connections x ${streams} streams${mode === 'grpc' ? ' of unary gRPC calls' : ''}`;
  console.log(`--mode ${mode}, --workers ${workers}, compiled${nodeArgs.length > 0 ? `, node ${nodeArgs.join(' ')}` : ''}${values.bin !== undefined ? `, ${values.bin}` : ''}; idle before the load: ${show(rss())} MB`);
  const samples: number[][] = [];
  let peak = { mb: 0, smaps: {} as Record<string, number>, heap: Promise.resolve('') };
  const timer = setInterval(() => {
    const list = pids();
    const mbs = list.map((pid) => processRss(pid) / 1048576);
    samples.push(mbs);
    const top = mbs.indexOf(Math.max(...mbs));
    if (mbs[top]! > peak.mb) peak = { mb: mbs[top]!, smaps: smapsBreakdown(list[top]!), heap: workers === '1' ? heapSpaces() : Promise.resolve('') };
  }, 1000);
  const result = await load();
  clearInterval(timer);
  const highest = samples[0]!.map((_, i) => Math.max(...samples.map((s) => s[i] ?? 0)));
  console.log(`under load (${loadSeconds} s, ${shape}; ${result}): highest per process ${show(highest)} MB; last sample ${show(samples.at(-1)!)} MB; load ${loadavg()[0]!.toFixed(2)}`);
  const parts = Object.entries(peak.smaps).sort((a, b) => b[1] - a[1]).map(([k, mb]) => `${k} ${mb.toFixed(1)}`);
  console.log(`  at its highest (${peak.mb.toFixed(1)} MB): ${parts.join(', ')}`);
  const heap = await peak.heap;
  if (heap !== '') console.log(`  V8 heap spaces then (used/size MB): ${heap}`);
  await new Promise((r) => setTimeout(r, afterSeconds * 1000));
  console.log(`${afterSeconds} s after the load: ${show(rss())} MB; load ${loadavg()[0]!.toFixed(2)}`);
} finally {
  child.kill('SIGTERM');
  grpcUpstream?.kill('SIGTERM');
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
}
