// Where an HTTP/2 request's CPU goes: one portico (one worker, core 0) proxying to one
// HTTP/1.1 upstream (nginx, core 1), driven by the same load generator (h2load, core 1)
// over each front protocol in turn, so the differences split TLS from HTTP/2 from the
// proxying itself:
//   h1      HTTP/1.1, plain                       (h2load --h1)
//   h1-tls  HTTP/1.1 over TLS                     (h2load --h1, https)
//   h2c     HTTP/2 with prior knowledge, plain    (h2load, http)
//   h2      HTTP/2 over TLS (ALPN h2)             (h2load, https)
// HTTP/2 runs at each of --streams (concurrent streams per connection, default 1,10,50)
// on --clients connections (default 10); HTTP/1.1 on --h1-clients connections (default
// 100: the concurrency of 10 x 10 streams), one request at a time each (h2load hung with
// 500 HTTP/1.1 connections over TLS, so h1 is not run at 10 x 50). Each line: req/s and the CPU portico spent per
// request (user + system, from /proc). Modes and stream counts alternate within a round;
// --variant-bin adds a second portico (another checkout's bin/portico.js) to the same
// rounds for an A/B.
//
//   node bench/h2-split.ts [--duration S] [--rounds N] [--clients N] [--streams 1,10,50] [--h1-clients N]
//                          [--modes h1,h1-tls,h2c,h2] [--node-args "..."] [--variant-bin PATH]
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { canPin, cpuSeconds, run, startProcess, stopAll, type Managed } from './lib/processes.ts';
import { ensureTools, freePort, positiveInteger, roundOrder } from './lib/tools.ts';
import { porticoManifests, upstreamConfig } from './lib/nginx.ts';
import { median } from './lib/wrk.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PORTICO_BIN = join(ROOT, 'bin', 'portico.js');
const PROXY_CORE = 0;
const LOAD_CORE = 1;
const HOST = 'bench.local';
const MODES = ['h1', 'h1-tls', 'h2c', 'h2'] as const;
type Mode = (typeof MODES)[number];

function readOptions() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '4' },
      rounds: { type: 'string', default: '2' },
      clients: { type: 'string', default: '10' },
      streams: { type: 'string', default: '1,10,50' },
      'h1-clients': { type: 'string', default: '100' },
      modes: { type: 'string', default: MODES.join(',') },
      'node-args': { type: 'string', default: '' },
      'variant-bin': { type: 'string' },
    },
  });
  const modes = values.modes.split(',').map((m) => m.trim());
  for (const m of modes) if (!(MODES as readonly string[]).includes(m)) throw new Error(`--modes: expected some of ${MODES.join(',')}, got ${JSON.stringify(m)}`);
  return {
    durationS: positiveInteger('duration', values.duration),
    rounds: positiveInteger('rounds', values.rounds),
    clients: positiveInteger('clients', values.clients),
    streams: values.streams.split(',').map((s) => positiveInteger('streams', s.trim())),
    h1Clients: positiveInteger('h1-clients', values['h1-clients']),
    modes: modes as Mode[],
    nodeArgs: values['node-args'].split(' ').filter((x) => x !== ''),
    variantBin: values['variant-bin'],
  };
}

/** bench.local over plain HTTP and over TLS (no redirect), to the HTTP/1.1 upstream. */
function manifests(upstreamPort: number, cert: string, key: string): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const base = porticoManifests(upstreamPort)
    .replace('  name: bench\n  namespace: default\n', '  name: bench\n  namespace: default\n  annotations:\n    portico.dev/tls-redirect: "false"\n')
    .replace(`  rules:\n    - host: ${HOST}`, `  tls:\n    - hosts: [${HOST}]\n      secretName: bench-tls\n  rules:\n    - host: ${HOST}`);
  return `${base}---
apiVersion: v1
kind: Secret
metadata:
  name: bench-tls
  namespace: default
type: kubernetes.io/tls
data:
  tls.crt: ${b64(cert)}
  tls.key: ${b64(key)}
`;
}

interface Run {
  rps: number;
  cpuUs: number;
}

/** streams: per HTTP/2 connection; for HTTP/1.1, the number of connections. */
async function h2load(mode: Mode, streams: number, ports: { http: number; https: number }, seconds: number, clients: number, pid: number | undefined): Promise<Run> {
  const h1 = mode === 'h1' || mode === 'h1-tls';
  const tls = mode === 'h1-tls' || mode === 'h2';
  const url = tls ? `https://127.0.0.1:${ports.https}/` : `http://127.0.0.1:${ports.http}/`;
  const args = h1 ? ['--h1', `-c${streams}`, '-m1'] : [`-c${clients}`, `-m${streams}`];
  args.push('-t1', `-D${seconds}`, '-H', `:authority: ${HOST}`, url);
  const before = pid === undefined ? undefined : cpuSeconds(pid);
  const r = await run('h2load', args, LOAD_CORE);
  const after = pid === undefined ? undefined : cpuSeconds(pid);
  if (r.code !== 0) throw new Error(`h2load ${args.join(' ')} exited with ${r.code}: ${r.stderr || r.stdout}`);
  const rps = /finished in [\d.]+s, ([\d.]+) req\/s/.exec(r.stdout);
  const counts = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(r.stdout);
  const codes = /status codes: (\d+) 2xx/.exec(r.stdout);
  if (rps === null || counts === null || codes === null) throw new Error(`cannot read h2load's output:\n${r.stdout}`);
  const ok = Number(codes[1]);
  if (Number(counts[2]) + Number(counts[3]) > 0) console.log(`  h2load ${args.join(' ')}: ${counts[0]}; ${codes[0]}`);
  return { rps: Number(rps[1]), cpuUs: before !== undefined && after !== undefined && ok > 0 ? ((after - before) * 1e6) / ok : NaN };
}

/** One request, to know a portico serves the route (curl is not assumed: h2load -n1). */
async function waitServing(name: string, proc: Managed, ports: { http: number; https: number }): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && proc.child.exitCode === null) {
    const r = await run('h2load', ['-n1', '-c1', '-H', `:authority: ${HOST}`, `https://127.0.0.1:${ports.https}/`]);
    if (r.code === 0 && /1 succeeded/.test(r.stdout) && /1 2xx/.test(r.stdout)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${name} does not serve ${HOST} on 127.0.0.1:${ports.https}`);
}

async function main(): Promise<void> {
  const o = readOptions();
  ensureTools(['nginx', 'h2load', 'openssl'], ['nginx', 'nghttp2-client', 'openssl']);
  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-h2-split-'));
  chmodSync(dir, 0o755);
  const cleanup = () => stopAll().finally(() => rmSync(dir, { recursive: true, force: true }));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void cleanup().then(() => process.exit(130)));
  try {
    const keygen = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', `/CN=${HOST}`, '-addext', `subjectAltName=DNS:${HOST}`, '-days', '2', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { encoding: 'utf8' });
    if (keygen.status !== 0) throw new Error(`openssl: ${keygen.stderr}`);
    const upstreamPort = await freePort();
    writeFileSync(join(dir, 'upstream.conf'), upstreamConfig(dir, upstreamPort));
    mkdirSync(join(dir, 'manifests'));
    writeFileSync(join(dir, 'manifests', 'bench.yaml'), manifests(upstreamPort, readFileSync(join(dir, 'cert.pem'), 'utf8'), readFileSync(join(dir, 'key.pem'), 'utf8')));
    startProcess('upstream', 'nginx', ['-p', dir, '-c', join(dir, 'upstream.conf'), '-e', join(dir, 'upstream-error.log')], { core: LOAD_CORE, logFile: join(dir, 'upstream.log') });

    const targets = o.variantBin === undefined ? ['portico'] : ['portico', 'portico-b'];
    const procs = new Map<string, { proc: Managed; ports: { http: number; https: number } }>();
    for (const name of targets) {
      const ports = { http: await freePort(), https: await freePort() };
      const bin = name === 'portico' ? PORTICO_BIN : o.variantBin!;
      const args = [...o.nodeArgs, bin, '--manifests', join(dir, 'manifests'), '--http-port', String(ports.http), '--https-port', String(ports.https), '--bind', '127.0.0.1', '--admin-port', '0', '--access-log=false', '--log-level', 'warn', '--workers', '1', '--hsts=false'];
      const proc = startProcess(name, process.execPath, args, { core: PROXY_CORE, logFile: join(dir, `${name}.log`) });
      procs.set(name, { proc, ports });
    }
    for (const [name, { proc, ports }] of procs) await waitServing(name, proc, ports);
    const cells = o.modes.flatMap((mode): { mode: Mode; streams: number }[] => (mode === 'h1' || mode === 'h1-tls' ? [{ mode, streams: o.h1Clients }] : o.streams.map((streams) => ({ mode, streams }))));
    console.log(`portico CPU per request by front protocol (to an HTTP/1.1 upstream): ${o.rounds} rounds x ${o.durationS}s, h2: ${o.clients} connections x m streams, h1: c connections, ${canPin() ? `portico on core ${PROXY_CORE}, h2load + upstream on core ${LOAD_CORE}` : 'unpinned'}`);
    for (const [, { ports }] of procs) for (const c of cells) await h2load(c.mode, c.streams, ports, 1, o.clients, undefined); // warm-up
    const results = new Map<string, Run[]>();
    const label = (c: { mode: Mode; streams: number }) => `${c.mode} ${c.mode.startsWith('h1') ? 'c' : 'm'}${c.streams}`;
    const key = (t: string, c: { mode: Mode; streams: number }) => `${label(c)} ${t}`;
    for (let round = 1; round <= o.rounds; round++) {
      for (const c of roundOrder(cells, round)) {
        for (const t of roundOrder(targets, round)) {
          const { proc, ports } = procs.get(t)!;
          const r = await h2load(c.mode, c.streams, ports, o.durationS, o.clients, proc.child.pid);
          const list = results.get(key(t, c)) ?? [];
          list.push(r);
          results.set(key(t, c), list);
          console.log(`r${round} ${key(t, c).padEnd(22)} ${Math.round(r.rps).toLocaleString('en-US').padStart(8)} req/s   cpu ${r.cpuUs.toFixed(1).padStart(6)} µs/req`);
        }
      }
    }
    console.log('\nmedians (CPU µs per request; req/s)');
    for (const c of cells) {
      const line = targets.map((t) => {
        const rs = results.get(key(t, c))!;
        return `${t} ${median(rs.map((r) => r.cpuUs)).toFixed(1).padStart(6)} µs ${Math.round(median(rs.map((r) => r.rps))).toLocaleString('en-US').padStart(7)}/s`;
      });
      // Paired by round (the same minute's load on both): portico-b's CPU per request over portico's.
      const paired = targets.length === 2 ? results.get(key(targets[1]!, c))!.map((b, i) => b.cpuUs / results.get(key(targets[0]!, c))![i]!.cpuUs) : [];
      console.log(`${label(c).padEnd(10)} ${line.join('   ')}${paired.length > 0 ? `   b/a CPU per request: median ${median(paired).toFixed(2)}x, geometric mean ${Math.exp(paired.reduce((s, r) => s + Math.log(r), 0) / paired.length).toFixed(2)}x, b higher in ${paired.filter((r) => r > 1).length}/${paired.length}` : ''}`);
    }
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(`bench: ${(err as Error).message}`);
  process.exitCode = 1;
});
