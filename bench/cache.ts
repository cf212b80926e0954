// `npm run bench:cache`: cached answers (HITs) per second, portico's cache against
// nginx's proxy_cache, one core each, same upstream, same load.
//
// Layout (2 cores), as bench/run.ts: the proxy under test alone on core 0, wrk and the
// upstream nginx on core 1. The upstream answers `--body-bytes` bytes with
// Cache-Control: max-age=3600, so after the first request both proxies answer from
// their cache and the upstream is idle: what is measured is the HIT path. The two are
// measured in alternating rounds and the median round is reported.
//
// Options (flag or environment variable):
//   --duration S     seconds per measured round   BENCH_DURATION     (10)
//   --connections N  wrk connections              BENCH_CONNECTIONS  (50)
//   --rounds N       rounds per proxy             BENCH_ROUNDS       (3)
//   --warmup S       seconds of warm-up per proxy BENCH_WARMUP       (3)
//   --body-bytes N   size of the cached body      BENCH_BODY_BYTES   (1024)
//   --cpu-prof       portico writes a V8 CPU profile to bench/results/ (slower; for tuning)
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { canPin, run, startProcess, stopAll, stopProcess, type Managed } from './lib/processes.ts';
import { ensureTools, freePort, positiveInteger } from './lib/tools.ts';
import { cachingUpstreamConfig, porticoManifests, proxyCacheConfig } from './lib/nginx.ts';
import { median, parseWrkOutput, type WrkResult } from './lib/wrk.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PORTICO_BIN = join(ROOT, 'bin', 'portico.js');
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const PROXY_CORE = 0;
const LOAD_CORE = 1;
const HOST = 'bench.local';

type Target = 'nginx' | 'portico';
let interrupted = false;

function readOptions() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: process.env.BENCH_DURATION ?? '10' },
      connections: { type: 'string', default: process.env.BENCH_CONNECTIONS ?? '50' },
      rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '3' },
      warmup: { type: 'string', default: process.env.BENCH_WARMUP ?? '3' },
      'body-bytes': { type: 'string', default: process.env.BENCH_BODY_BYTES ?? '1024' },
      'cpu-prof': { type: 'boolean', default: false },
    },
  });
  return {
    durationS: positiveInteger('duration', values.duration),
    connections: positiveInteger('connections', values.connections),
    rounds: positiveInteger('rounds', values.rounds),
    warmupS: positiveInteger('warmup', values.warmup),
    bodyBytes: positiveInteger('body-bytes', values['body-bytes']),
    cpuProf: values['cpu-prof'] === true,
  };
}

function get(port: number): Promise<{ status: number; body: string; cache: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { host: HOST }, agent: false, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, cache: String(res.headers['x-cache'] ?? '') }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** Waits until the proxy answers the body from its cache (X-Cache: HIT); fails fast if the process died. */
async function waitHit(name: string, port: number, body: string, proc: Managed, logFile: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (Date.now() < deadline && !exited) {
    try {
      const r = await get(port);
      if (r.status === 200 && r.body === body && r.cache === 'HIT') return;
      last = `status ${r.status}, X-Cache ${r.cache || '(none)'}: ${r.body.slice(0, 80)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  let log = '';
  try {
    log = readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n');
  } catch {}
  throw new Error(`${name} is not answering ${HOST} from its cache on 127.0.0.1:${port} (${exited ? 'it exited' : last})\n--- ${logFile} ---\n${log}`);
}

async function wrk(port: number, seconds: number, connections: number): Promise<WrkResult> {
  const r = await run('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-H', `Host: ${HOST}`, `http://127.0.0.1:${port}/`], LOAD_CORE);
  if (r.code !== 0) throw new Error(`wrk exited with ${r.code}: ${r.stderr || r.stdout}`);
  return parseWrkOutput(r.stdout);
}

const fmtRps = (n: number) => Math.round(n).toLocaleString('en-US');
const fmtMs = (n: number) => `${n.toFixed(2)}ms`;
function row(label: string, target: Target, r: Pick<WrkResult, 'requestsPerSec' | 'p50Ms' | 'p99Ms'> & { errors?: number }): string {
  const errors = r.errors ? `  (${r.errors} errors)` : '';
  return `${label.padEnd(8)} ${target.padEnd(8)} ${fmtRps(r.requestsPerSec).padStart(10)} req/s   p50 ${fmtMs(r.p50Ms).padStart(9)}   p99 ${fmtMs(r.p99Ms).padStart(9)}${errors}`;
}

async function main(): Promise<void> {
  const options = readOptions();
  ensureTools(['nginx', 'wrk'], ['nginx', 'wrk']);
  const pin = canPin();
  if (!pin) console.log('note: not pinning to cores (needs taskset and at least 2 CPUs); numbers will be noisier');
  const body = 'x'.repeat(options.bodyBytes - 1) + '\n';

  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-cache-'));
  chmodSync(dir, 0o755);
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);
  let cleaningUp: Promise<void> | undefined;
  const cleanup = () => (cleaningUp ??= stopAll().finally(() => rmSync(dir, { recursive: true, force: true })));
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted = true;
    console.log(`\n${signal}: stopping everything`);
    void cleanup().then(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    const [upstreamPort, nginxPort, porticoPort] = [await freePort(), await freePort(), await freePort()];
    writeFileSync(join(dir, 'upstream.conf'), cachingUpstreamConfig(dir, upstreamPort, body));
    writeFileSync(join(dir, 'proxy.conf'), proxyCacheConfig(dir, nginxPort, upstreamPort));
    writeFileSync(
      join(manifests, 'bench.yaml'),
      porticoManifests(upstreamPort).replace('  name: bench\n  namespace: default\n', '  name: bench\n  namespace: default\n  annotations:\n    portico.dev/cache: "true"\n'),
    );
    const upstream = startProcess('upstream nginx', 'nginx', ['-p', dir, '-c', join(dir, 'upstream.conf'), '-e', join(dir, 'upstream-error.log')], { core: LOAD_CORE, logFile: join(dir, 'upstream.log') });
    const nginx = startProcess('nginx', 'nginx', ['-p', dir, '-c', join(dir, 'proxy.conf'), '-e', join(dir, 'proxy-error.log')], { core: PROXY_CORE, logFile: join(dir, 'nginx.log') });
    mkdirSync(RESULTS_DIR, { recursive: true });
    const porticoArgs = [
      ...(options.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', RESULTS_DIR] : []),
      PORTICO_BIN,
      '--manifests', manifests,
      '--http-port', String(porticoPort),
      '--bind', '127.0.0.1',
      '--https-port', '0',
      '--admin-port', '0',
      '--access-log=false', '--log-level', 'warn',
      '--shutdown-grace', '1s',
      '--workers', '1',
    ];
    const portico = startProcess('portico', process.execPath, porticoArgs, { core: PROXY_CORE, logFile: join(dir, 'portico.log') });
    const ports: Record<Target, number> = { nginx: nginxPort, portico: porticoPort };
    await waitHit('nginx', nginxPort, body, nginx, join(dir, 'proxy-error.log'));
    await waitHit('portico', porticoPort, body, portico, join(dir, 'portico.log'));

    const nginxVersion = spawnSync('nginx', ['-v'], { encoding: 'utf8' }).stderr.trim().replace(/^nginx version: /, '');
    console.log(
      `cached HITs, portico vs ${nginxVersion} proxy_cache: ${options.bodyBytes}-byte body, ${options.rounds} rounds x ${options.durationS}s, wrk -t1 -c${options.connections}, ` +
        `${pin ? `proxies on core ${PROXY_CORE}, wrk + upstream on core ${LOAD_CORE}` : 'unpinned'}${options.cpuProf ? ', portico profiled' : ''}\n`,
    );
    for (const target of ['nginx', 'portico'] as const) await wrk(ports[target], options.warmupS, options.connections);
    const results: Record<Target, WrkResult[]> = { nginx: [], portico: [] };
    for (let round = 1; round <= options.rounds; round++) {
      for (const target of ['nginx', 'portico'] as const) {
        const r = await wrk(ports[target], options.durationS, options.connections);
        results[target].push(r);
        console.log(row(`round ${round}`, target, { ...r, errors: r.non2xx + r.socketErrors }));
      }
    }
    const summary = (target: Target) => ({
      requestsPerSec: median(results[target].map((r) => r.requestsPerSec)),
      p50Ms: median(results[target].map((r) => r.p50Ms)),
      p99Ms: median(results[target].map((r) => r.p99Ms)),
      errors: results[target].reduce((sum, r) => sum + r.non2xx + r.socketErrors, 0),
    });
    const medians = { nginx: summary('nginx'), portico: summary('portico') };
    const ratio = medians.portico.requestsPerSec / medians.nginx.requestsPerSec;
    console.log('');
    console.log(row('median', 'nginx', medians.nginx));
    console.log(row('median', 'portico', medians.portico));
    console.log(`\nportico/nginx cached throughput: ${ratio.toFixed(2)}x (target >= 0.5x)`);
    // Both still answer from their caches after the load (nothing was evicted or expired).
    for (const target of ['nginx', 'portico'] as const) {
      const r = await get(ports[target]);
      if (r.cache !== 'HIT') console.log(`warning: ${target} answered X-Cache ${r.cache} after the load`);
      if (medians[target].errors > 0) console.log(`warning: ${target} had ${medians[target].errors} non-2xx responses or socket errors; its numbers are suspect`);
    }
    const file = join(RESULTS_DIR, `cache-compare-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(
      file,
      JSON.stringify({ date: new Date().toISOString(), options, environment: { node: process.version, nginx: nginxVersion, cpu: cpus()[0]?.model ?? 'unknown', cpus: cpus().length, pinned: pin }, rounds: results, medians, ratio }, null, 2) + '\n',
    );
    console.log(`\nresults written to ${file}`);
    await Promise.all([stopProcess(portico), stopProcess(nginx), stopProcess(upstream)]);
  } catch (err) {
    // A proxy that died mid-run: its last words before the directory goes.
    for (const name of ['portico.log', 'proxy-error.log']) {
      try {
        console.error(`--- ${name} (last lines) ---\n${readFileSync(join(dir, name), 'utf8').split('\n').slice(-30).join('\n')}`);
      } catch {}
    }
    throw err;
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  if (interrupted) return;
  console.error(`bench: ${(err as Error).message}`);
  process.exitCode = 1;
});
