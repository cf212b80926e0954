// `npm run bench:h2`: HTTP/2 from clients and gRPC unary calls, portico against nginx,
// same upstreams, same load (h2load from nghttp2-client).
//
// Two scenarios, measured in alternating rounds (nginx, portico, nginx, portico...):
// - h2: h2load over TLS (ALPN h2) to each proxy, which forwards over HTTP/1.1 keep-alive
//   to an nginx upstream answering a small fixed body. nginx: `listen ... ssl http2`
//   (1.22's spelling of `http2 on`).
// - gRPC: h2load sends unary calls (POST, application/grpc, te: trailers, one 5-byte
//   message) over h2c to each proxy, which forwards over h2c to an nginx gRPC upstream
//   answering a fixed message with grpc-status 0 in the trailers (C, so it never limits
//   the numbers). nginx: `grpc_pass` with a keep-alive upstream; portico:
//   `portico.dev/upstream-protocol: h2c`.
// Layout (2 cores): the proxy under test alone on core 0 (one worker each); h2load and
// the upstreams on core 1. Latency percentiles come from h2load's per-request log.
//
// Options (flag or environment variable):
//   --duration S   seconds per measured round   BENCH_DURATION   (8)
//   --rounds N     rounds per proxy and scenario BENCH_ROUNDS    (3)
//   --clients N    h2load connections            BENCH_CLIENTS    (10)
//   --streams N    concurrent streams each       BENCH_STREAMS    (10)
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { canPin, cpuSeconds, rssBytes, run, startProcess, stopAll, type Managed } from './lib/processes.ts';
import { ensureTools, freePort, positiveInteger, roundOrder } from './lib/tools.ts';
import { GRPC_HOST, GRPC_PATH, GRPC_REPLY, GRPC_REQUEST, grpcRouteManifests, grpcUpstreamConfig, porticoManifests, upstreamConfig, UPSTREAM_BODY } from './lib/nginx.ts';
import { median } from './lib/wrk.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PORTICO_BIN = join(ROOT, 'bin', 'portico.js');
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const PROXY_CORE = 0;
const LOAD_CORE = 1;
const HOST = 'bench.local';

type Target = 'nginx' | 'portico' | 'portico-b';
type Scenario = 'h2' | 'grpc';

interface Options {
  durationS: number;
  rounds: number;
  clients: number;
  streams: number;
  scenarios: Scenario[];
  nodeArgs: string[];
  variantEnv: string | undefined;
  variantNodeArgs: string[];
  variantBin: string | undefined;
}

function readOptions(): Options {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: process.env.BENCH_DURATION ?? '8' },
      rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '3' },
      clients: { type: 'string', default: process.env.BENCH_CLIENTS ?? '10' },
      streams: { type: 'string', default: process.env.BENCH_STREAMS ?? '10' },
      scenario: { type: 'string', default: 'h2,grpc' },
      // e.g. --node-args="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile portico under load
      'node-args': { type: 'string', default: '' },
      // A/B of portico itself: a second portico ("portico-b") with this extra environment
      // (e.g. a PORTICO_EXPERIMENT switch while tuning), in the same interleaved rounds.
      'variant-env': { type: 'string' },
      'variant-node-args': { type: 'string', default: '' },
      // portico-b from another checkout (e.g. a worktree of an older commit): its bin/portico.js
      'variant-bin': { type: 'string' },
    },
  });
  const scenarios = values.scenario.split(',').map((x) => x.trim());
  for (const x of scenarios) if (x !== 'h2' && x !== 'grpc') throw new Error(`--scenario: expected h2, grpc or both (h2,grpc), got ${JSON.stringify(x)}`);
  return {
    durationS: positiveInteger('duration', values.duration),
    rounds: positiveInteger('rounds', values.rounds),
    clients: positiveInteger('clients', values.clients),
    streams: positiveInteger('streams', values.streams),
    scenarios: scenarios as Scenario[],
    nodeArgs: values['node-args'].split(' ').filter((x) => x !== ''),
    variantEnv: values['variant-env'],
    variantNodeArgs: values['variant-node-args'].split(' ').filter((x) => x !== ''),
    variantBin: values['variant-bin'],
  };
}

const common = (dir: string, name: string) => `worker_processes 1;
daemon off;
master_process on;
pid ${join(dir, `${name}.pid`)};
error_log ${join(dir, `${name}-error.log`)} warn;
events { worker_connections 4096; }
`;
const temps = (dir: string) => ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, `tmp-${t}`)};`).join('\n');

/** nginx as the proxy: h2 over TLS to the HTTP/1.1 upstream, and h2c gRPC to the gRPC upstream. */
function proxyConfig(dir: string, tlsPort: number, grpcPort: number, upstreamPort: number, grpcUpstreamPort: number): string {
  return `${common(dir, 'proxy')}
http {
  access_log off;
${temps(dir)}
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  http2_max_requests 10000000;
  upstream bench_upstream {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
    keepalive_requests 10000000;
  }
  upstream grpc_upstream {
    server 127.0.0.1:${grpcUpstreamPort};
    keepalive 64;
    keepalive_requests 10000000;
  }
  server {
    listen 127.0.0.1:${tlsPort} ssl http2 backlog=4096;
    server_name ${HOST};
    ssl_certificate ${join(dir, 'cert.pem')};
    ssl_certificate_key ${join(dir, 'key.pem')};
    location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Request-ID $request_id;
    }
  }
  server {
    listen 127.0.0.1:${grpcPort} http2 backlog=4096;
    server_name ${GRPC_HOST};
    location / {
      grpc_pass grpc://grpc_upstream;
      grpc_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      grpc_set_header X-Request-ID $request_id;
    }
  }
}
`;
}

/** portico's manifests: bench.local over TLS to the HTTP/1.1 upstream, grpc.local over h2c to the gRPC upstream. */
function manifests(upstreamPort: number, grpcUpstreamPort: number, cert: string, key: string): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const base = porticoManifests(upstreamPort).replace(`  rules:\n    - host: ${HOST}`, `  tls:\n    - hosts: [${HOST}]\n      secretName: bench-tls\n  rules:\n    - host: ${HOST}`);
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
---
${grpcRouteManifests(grpcUpstreamPort)}`;
}

/** One request over HTTP/2 (h2 with any certificate, or h2c); resolves with status, body and grpc-status. */
function h2Request(url: string, authority: string, grpc: boolean): Promise<{ status: number; body: Buffer; grpcStatus: string | undefined }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { rejectUnauthorized: false });
    session.on('error', reject);
    const headers: http2.OutgoingHttpHeaders = { ':authority': authority, ':path': grpc ? GRPC_PATH : '/', ':method': grpc ? 'POST' : 'GET' };
    if (grpc) Object.assign(headers, { 'content-type': 'application/grpc', te: 'trailers' });
    const stream = session.request(headers, { endStream: !grpc });
    let status = 0;
    let grpcStatus: string | undefined;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      status = Number(h[':status']);
      if (h['grpc-status'] !== undefined) grpcStatus = String(h['grpc-status']);
    });
    stream.on('trailers', (t) => (grpcStatus = t['grpc-status'] === undefined ? grpcStatus : String(t['grpc-status'])));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      session.close();
      resolve({ status, body: Buffer.concat(chunks), grpcStatus });
    });
    stream.on('error', reject);
    stream.setTimeout(2000, () => stream.destroy(new Error('timeout')));
    if (grpc) stream.end(GRPC_REQUEST);
  });
}

/** Waits until a proxy answers a scenario as the upstream would; fails fast if the process died. */
async function waitServing(name: string, scenario: Scenario, port: number, proc: Managed, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (Date.now() < deadline && !exited) {
    try {
      const r = scenario === 'h2' ? await h2Request(`https://127.0.0.1:${port}`, HOST, false) : await h2Request(`http://127.0.0.1:${port}`, GRPC_HOST, true);
      if (scenario === 'h2' && r.status === 200 && r.body.toString() === UPSTREAM_BODY) return;
      if (scenario === 'grpc' && r.status === 200 && r.grpcStatus === '0' && r.body.equals(GRPC_REPLY)) return;
      last = `status ${r.status}, grpc-status ${r.grpcStatus}: ${r.body.toString().slice(0, 200)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${name} does not serve the ${scenario} scenario on 127.0.0.1:${port} (${exited ? 'it exited' : last})`);
}

interface Result {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
  /** h2load's own counts when some requests failed, printed under the row they belong to. */
  failures?: string;
  /** CPU time (user + system) of the proxy's processes per successful request. */
  cpuUsPerRequest?: number;
  /** Resident memory of the proxy's processes right after the load (MB). */
  rssMB?: number;
}

async function h2load(dir: string, scenario: Scenario, port: number, seconds: number, o: Options, log: boolean, proxyPid?: number): Promise<Result> {
  const logFile = join(dir, 'h2load.log');
  const args = ['-t1', `-c${o.clients}`, `-m${o.streams}`, `-D${seconds}`];
  if (log) args.push(`--log-file=${logFile}`);
  if (scenario === 'h2') args.push('-H', `:authority: ${HOST}`, `https://127.0.0.1:${port}/`);
  else args.push('-H', `:authority: ${GRPC_HOST}`, '-H', 'content-type: application/grpc', '-H', 'te: trailers', '-d', join(dir, 'grpc-request.bin'), `http://127.0.0.1:${port}${GRPC_PATH}`);
  writeFileSync(logFile, '');
  const cpuBefore = proxyPid === undefined ? undefined : cpuSeconds(proxyPid);
  const r = await run('h2load', args, LOAD_CORE);
  const cpuAfter = proxyPid === undefined ? undefined : cpuSeconds(proxyPid);
  const rss = proxyPid === undefined ? undefined : rssBytes(proxyPid);
  if (r.code !== 0) throw new Error(`h2load exited with ${r.code}: ${r.stderr || r.stdout}`);
  const rps = /finished in [\d.]+s, ([\d.]+) req\/s/.exec(r.stdout);
  const counts = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(r.stdout);
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(r.stdout);
  if (rps === null || counts === null || codes === null) throw new Error(`cannot read h2load's output:\n${r.stdout}`);
  const failed = Number(counts[2]) + Number(counts[3]) + Number(codes[2]) + Number(codes[3]) + Number(codes[4]);
  const failures = failed > 0 ? `h2load: ${counts[0]}; ${codes[0]}` : undefined;
  let p50Ms = 0;
  let p99Ms = 0;
  if (log) {
    // Each line: start time (µs since the epoch), status, time for the request (µs).
    const durations = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => Number(l.split('\t')[2]))
      .sort((a, b) => a - b);
    const at = (q: number) => (durations.length === 0 ? 0 : durations[Math.min(durations.length - 1, Math.floor(q * durations.length))]! / 1000);
    p50Ms = at(0.5);
    p99Ms = at(0.99);
  }
  const done = Number(counts[1]);
  const cpuUsPerRequest = cpuBefore !== undefined && cpuAfter !== undefined && done > 0 ? ((cpuAfter - cpuBefore) * 1e6) / done : undefined;
  return { requestsPerSec: Number(rps[1]), p50Ms, p99Ms, failed, failures, cpuUsPerRequest, rssMB: rss === undefined ? undefined : rss / 1e6 };
}

const fmt = (label: string, target: string, r: Result) =>
  `${label.padEnd(10)} ${target.padEnd(9)} ${Math.round(r.requestsPerSec).toLocaleString('en-US').padStart(10)} req/s   p50 ${r.p50Ms.toFixed(2).padStart(7)}ms   p99 ${r.p99Ms.toFixed(2).padStart(7)}ms${r.cpuUsPerRequest !== undefined ? `   cpu ${r.cpuUsPerRequest.toFixed(1).padStart(6)}µs/req` : ''}${r.rssMB !== undefined ? `   rss ${r.rssMB.toFixed(0).padStart(4)} MB` : ''}${r.failed ? `   (${r.failed} failed)` : ''}${r.failures ? `\n  ${r.failures}` : ''}`;

async function main(): Promise<void> {
  const o = readOptions();
  ensureTools(['nginx', 'h2load', 'openssl'], ['nginx', 'nghttp2-client', 'openssl']);
  const pin = canPin();
  if (!pin) console.log('note: not pinning to cores (needs taskset and at least 2 CPUs); numbers will be noisier');
  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-h2-'));
  chmodSync(dir, 0o755);
  const cleanup = () => stopAll().finally(() => rmSync(dir, { recursive: true, force: true }));
  process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    const keygen = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', `/CN=${HOST}`, '-addext', `subjectAltName=DNS:${HOST}`, '-days', '2', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { encoding: 'utf8' });
    if (keygen.status !== 0) throw new Error(`openssl: ${keygen.stderr}`);
    mkdirSync(join(dir, 'grpc-root'));
    chmodSync(join(dir, 'grpc-root'), 0o755);
    writeFileSync(join(dir, 'grpc-root', 'reply'), GRPC_REPLY);
    writeFileSync(join(dir, 'grpc-request.bin'), GRPC_REQUEST);
    const [upstreamPort, grpcUpstreamPort, nginxTls, nginxGrpc, porticoHttp, porticoHttps] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
    writeFileSync(join(dir, 'upstream.conf'), upstreamConfig(dir, upstreamPort));
    writeFileSync(join(dir, 'grpc-upstream.conf'), grpcUpstreamConfig(dir, grpcUpstreamPort));
    writeFileSync(join(dir, 'proxy.conf'), proxyConfig(dir, nginxTls, nginxGrpc, upstreamPort, grpcUpstreamPort));
    mkdirSync(join(dir, 'manifests'));
    writeFileSync(join(dir, 'manifests', 'bench.yaml'), manifests(upstreamPort, grpcUpstreamPort, readFileSync(join(dir, 'cert.pem'), 'utf8'), readFileSync(join(dir, 'key.pem'), 'utf8')));

    for (const name of ['upstream', 'grpc-upstream']) {
      startProcess(name, 'nginx', ['-p', dir, '-c', join(dir, `${name}.conf`), '-e', join(dir, `${name}-error.log`)], { core: LOAD_CORE, logFile: join(dir, `${name}.log`) });
    }
    const nginx = startProcess('nginx', 'nginx', ['-p', dir, '-c', join(dir, 'proxy.conf'), '-e', join(dir, 'proxy-error.log')], { core: PROXY_CORE, logFile: join(dir, 'nginx.log') });
    const [porticoBHttp, porticoBHttps] = [await freePort(), await freePort()];
    const porticoArgs = (http: number, https: number, bin = PORTICO_BIN) => [bin, '--manifests', join(dir, 'manifests'), '--http-port', String(http), '--https-port', String(https), '--bind', '127.0.0.1', '--admin-port', '0', '--access-log=false', '--log-level', 'warn', '--workers', '1', '--hsts=false'];
    const portico = startProcess('portico', process.execPath, [...o.nodeArgs, ...porticoArgs(porticoHttp, porticoHttps)], { core: PROXY_CORE, logFile: join(dir, 'portico.log') });
    const withVariant = o.variantEnv !== undefined || o.variantNodeArgs.length > 0 || o.variantBin !== undefined;
    const variantEnv = Object.fromEntries((o.variantEnv ?? '').split(',').filter((x) => x.includes('=')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    const porticoB = withVariant
      ? startProcess('portico-b', process.execPath, [...o.variantNodeArgs, ...porticoArgs(porticoBHttp, porticoBHttps, o.variantBin)], { core: PROXY_CORE, logFile: join(dir, 'portico-b.log'), env: { ...process.env, ...variantEnv } })
      : undefined;
    const targets: Target[] = withVariant ? ['nginx', 'portico', 'portico-b'] : ['nginx', 'portico'];
    const proc: Record<Target, Managed | undefined> = { nginx, portico, 'portico-b': porticoB };
    const ports: Record<Scenario, Record<Target, number>> = { h2: { nginx: nginxTls, portico: porticoHttps, 'portico-b': porticoBHttps }, grpc: { nginx: nginxGrpc, portico: porticoHttp, 'portico-b': porticoBHttp } };
    for (const scenario of o.scenarios) for (const target of targets) await waitServing(target, scenario, ports[scenario][target], proc[target]!);
    const nginxVersion = spawnSync('nginx', ['-v'], { encoding: 'utf8' }).stderr.trim().replace(/^nginx version: /, '');
    console.log(`portico vs ${nginxVersion}, HTTP/2: ${o.rounds} rounds x ${o.durationS}s per proxy and scenario, h2load -c${o.clients} -m${o.streams}, ${pin ? `proxies on core ${PROXY_CORE}, h2load + upstreams on core ${LOAD_CORE}` : 'unpinned'}\n`);
    for (const scenario of o.scenarios) for (const target of targets) await h2load(dir, scenario, ports[scenario][target], 2, o, false);

    const results: Record<Scenario, Record<Target, Result[]>> = { h2: { nginx: [], portico: [], 'portico-b': [] }, grpc: { nginx: [], portico: [], 'portico-b': [] } };
    for (let round = 1; round <= o.rounds; round++) {
      for (const scenario of o.scenarios) {
        for (const target of roundOrder(targets, round)) {
          const r = await h2load(dir, scenario, ports[scenario][target], o.durationS, o, true, proc[target]!.child.pid);
          results[scenario][target].push(r);
          console.log(fmt(`${scenario} r${round}`, target, r));
        }
      }
    }
    const cpuOf = (rs: Result[]) => rs.flatMap((r) => (r.cpuUsPerRequest === undefined ? [] : [r.cpuUsPerRequest]));
    const summary = (rs: Result[]): Result => ({
      requestsPerSec: median(rs.map((r) => r.requestsPerSec)),
      p50Ms: median(rs.map((r) => r.p50Ms)),
      p99Ms: median(rs.map((r) => r.p99Ms)),
      failed: rs.reduce((n, r) => n + r.failed, 0),
      cpuUsPerRequest: cpuOf(rs).length > 0 ? median(cpuOf(rs)) : undefined,
      rssMB: Math.max(...rs.map((r) => r.rssMB ?? 0)) || undefined,
    });
    const report: Record<string, unknown> = { date: new Date().toISOString(), options: o, environment: { node: process.version, nginx: nginxVersion, cpu: cpus()[0]?.model ?? 'unknown', cpus: cpus().length, pinned: pin }, rounds: results };
    console.log('');
    for (const scenario of o.scenarios) {
      const n = summary(results[scenario].nginx);
      const p = summary(results[scenario].portico);
      console.log(fmt(`${scenario} median`, 'nginx', n));
      console.log(fmt(`${scenario} median`, 'portico', p));
      // Requests per CPU-second, portico over nginx: what the throughput ratio would be on
      // an otherwise idle core (the machine's other load barely changes it).
      const perCpu = p.cpuUsPerRequest !== undefined && n.cpuUsPerRequest !== undefined ? n.cpuUsPerRequest / p.cpuUsPerRequest : undefined;
      const ratio = { requestsPerSec: p.requestsPerSec / n.requestsPerSec, requestsPerCpuSecond: perCpu, p50: p.p50Ms / n.p50Ms, p99: p.p99Ms / n.p99Ms };
      console.log(`${scenario}: portico/nginx throughput ${ratio.requestsPerSec.toFixed(2)}x${perCpu !== undefined ? `, requests per CPU-second ${perCpu.toFixed(2)}x` : ''}, p50 ${ratio.p50.toFixed(2)}x, p99 ${ratio.p99.toFixed(2)}x\n`);
      report[scenario] = { medians: { nginx: n, portico: p }, ratio };
      if (withVariant) {
        const b = summary(results[scenario]['portico-b']);
        console.log(fmt(`${scenario} median`, 'portico-b', b));
        const perCpuB = p.cpuUsPerRequest !== undefined && b.cpuUsPerRequest !== undefined ? p.cpuUsPerRequest / b.cpuUsPerRequest : undefined;
        console.log(`${scenario}: portico-b/portico throughput ${(b.requestsPerSec / p.requestsPerSec).toFixed(2)}x${perCpuB !== undefined ? `, requests per CPU-second ${perCpuB.toFixed(2)}x` : ''}\n`);
        report[scenario] = { medians: { nginx: n, portico: p, 'portico-b': b }, ratio };
      }
    }
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `h2-compare-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    console.log(`results written to ${file}`);
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(`bench: ${(err as Error).message}`);
  process.exitCode = 1;
});
