// `npm run bench`: portico against nginx as a reverse proxy, same upstream, same load.
//
// Layout (2 cores): the proxy under test runs alone on core 0; wrk and the upstream
// share core 1. The upstream is a second nginx answering a fixed small body from C:
// it does far less work per request than either proxy, so it is never what limits
// the numbers (a Node upstream would need about as much CPU as portico itself).
// nginx and portico are measured in alternating rounds, so drift on the machine
// (thermal, noisy neighbours) hits both alike, and the median round is reported; the
// ratios are also given round by round (median and quartiles of each round's ratio).
//
// Options (flag or environment variable):
//   --duration S     seconds per measured round     BENCH_DURATION     (10)
//   --connections N  wrk connections                BENCH_CONNECTIONS  (50)
//   --rounds N       rounds per proxy               BENCH_ROUNDS       (3)
//   --warmup S       seconds of warm-up per proxy   BENCH_WARMUP       (3)
//   --pace-ms N      each connection waits N ms     BENCH_PACE_MS      (0: none)
//                    after each response before its next request (a wrk script's delay()), so
//                    both proxies get about the same load below saturation: p50/p99 are then
//                    the proxy's own latency, not the queue of every connection's request
//                    ahead of it (without pacing, wrk keeps every connection busy and the
//                    latency is mostly connections / throughput)
//   --workers N      processes per proxy            BENCH_WORKERS      (1): nginx worker_processes N,
//                    portico --workers N; with N > 1 the proxies are not pinned (on this 2-core
//                    machine they then share the cores with wrk and the upstream)
//   --access-log     both proxies log every request BENCH_ACCESS_LOG   (off): nginx to a file with
//                    buffer=64k, portico its JSON lines to a file (its stdout)
//   --log-pipe       with --access-log, the logs go into a pipe instead BENCH_LOG_PIPE (off): each
//                    proxy's stdout is a pipe that `cat` on the load core copies to the file,
//                    as a container runtime reads a pod's stdout (nginx's log to /dev/stdout)
//   --keep-logs      with --access-log, the log files grow over the whole run BENCH_KEEP_LOGS (off):
//                    by default they are emptied before each round, as a node's log rotation
//                    keeps a container's log small (kubelet: 10 MiB). Appending to a file of
//                    GBs costs more than to a small one: 8% of portico's requests at 1.7 GB
//                    against 110 MB, in alternating rounds (README, access log row)
//   --node-args "..."           Node options for portico (e.g. --cpu-prof --cpu-prof-dir=DIR)
//   --variant-bin PATH          A/B: a second portico ("portico-b", e.g. another checkout's
//                               bin/portico.js) in the same interleaved rounds, same core
//   --variant-node-args "..."   portico-b with other Node options (alone or with --variant-bin)
//   --variant-env K=V,K=V       portico-b with extra environment
//   --variant-log-off           portico-b with its access log off (with --access-log: what the
//                               log costs portico, in the same rounds as nginx's logging)
//   --fresh-process  every proxy (nginx, portico, portico-b) is started anew for each round
//                    and stopped after it          BENCH_FRESH_PROCESS (off; 1: on)
//                    The rounds stay interleaved; each round then warms its new process up
//                    first (--warmup seconds). One process for all rounds keeps the JIT
//                    decisions of its warm-up, which differ from one process to the next (by
//                    about 10% in req/s): an A/B with --variant-bin compares two such draws.
//                    With fresh processes every round is a new draw, and the median of several
//                    rounds (use 5 or more) compares the builds, not the draws.
// Each round also reports the CPU each proxy used per request (from /proc): steadier than
// req/s when other work shares the machine.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { canPin, cpuSeconds, run, startProcess, stopAll, stopProcess, type Managed } from './lib/processes.ts';
import { ensureTools, freePort, positiveInteger, roundOrder } from './lib/tools.ts';
import { porticoManifests, proxyConfig, upstreamConfig, UPSTREAM_BODY } from './lib/nginx.ts';
import { median, pairedRatios, parseWrkOutput, type WrkResult } from './lib/wrk.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PORTICO_BIN = join(ROOT, 'bin', 'portico.js');
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const PROXY_CORE = 0;
const LOAD_CORE = 1;
const HOST = 'bench.local';

type Target = 'nginx' | 'portico' | 'portico-b';

/** Ctrl-C or SIGTERM: what fails afterwards is the stopping, not an error to report. */
let interrupted = false;

interface BenchOptions {
  durationS: number;
  connections: number;
  rounds: number;
  warmupS: number;
  paceMs: number;
  accessLog: boolean;
  logPipe: boolean;
  /** The log files grow over the run rather than being emptied before each round. */
  keepLogs: boolean;
  workers: number;
  nodeArgs: string[];
  variantBin: string | undefined;
  variantNodeArgs: string[];
  variantEnv: string | undefined;
  variantLogOff: boolean;
  freshProcess: boolean;
}

function readOptions(): BenchOptions {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: process.env.BENCH_DURATION ?? '10' },
      connections: { type: 'string', default: process.env.BENCH_CONNECTIONS ?? '50' },
      rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '3' },
      warmup: { type: 'string', default: process.env.BENCH_WARMUP ?? '3' },
      'pace-ms': { type: 'string', default: process.env.BENCH_PACE_MS ?? '0' },
      'access-log': { type: 'boolean', default: process.env.BENCH_ACCESS_LOG === '1' },
      'log-pipe': { type: 'boolean', default: process.env.BENCH_LOG_PIPE === '1' },
      'keep-logs': { type: 'boolean', default: process.env.BENCH_KEEP_LOGS === '1' },
      workers: { type: 'string', default: process.env.BENCH_WORKERS ?? '1' },
      // Node options for portico, e.g. --node-args="--cpu-prof --cpu-prof-dir=/tmp/prof"
      'node-args': { type: 'string', default: '' },
      'variant-bin': { type: 'string' },
      'variant-node-args': { type: 'string', default: '' },
      'variant-env': { type: 'string' },
      'variant-log-off': { type: 'boolean', default: false },
      'fresh-process': { type: 'boolean', default: process.env.BENCH_FRESH_PROCESS === '1' },
    },
  });
  return {
    durationS: positiveInteger('duration', values.duration),
    connections: positiveInteger('connections', values.connections),
    rounds: positiveInteger('rounds', values.rounds),
    warmupS: positiveInteger('warmup', values.warmup),
    paceMs: values['pace-ms'] === '0' ? 0 : positiveInteger('pace-ms', values['pace-ms']),
    accessLog: values['access-log'] === true,
    logPipe: values['log-pipe'] === true,
    keepLogs: values['keep-logs'] === true,
    workers: positiveInteger('workers', values.workers),
    nodeArgs: values['node-args'].split(' ').filter((x) => x !== ''),
    variantBin: values['variant-bin'],
    variantNodeArgs: values['variant-node-args'].split(' ').filter((x) => x !== ''),
    variantEnv: values['variant-env'],
    variantLogOff: values['variant-log-off'] === true,
    freshProcess: values['fresh-process'] === true,
  };
}

function get(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { host: HOST }, agent: false, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** Waits until the proxy answers with the upstream's body; fails fast if the process died. */
async function waitServing(name: string, port: number, proc: Managed, logFile: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) break;
    try {
      const r = await get(port);
      if (r.status === 200 && r.body === UPSTREAM_BODY) return;
      last = `status ${r.status}: ${r.body.slice(0, 200)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  let log = '';
  try {
    log = readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n');
  } catch {}
  throw new Error(`${name} is not serving ${HOST} on 127.0.0.1:${port} (${exited ? 'it exited' : last})\n--- ${logFile} (last lines) ---\n${log}`);
}

type RoundResult = WrkResult & { cpuUsPerRequest?: number };

/** One wrk run; with the proxy's pid, also the CPU it spent per request meanwhile. */
async function wrk(port: number, seconds: number, connections: number, paceScript?: string, proxyPid?: number): Promise<RoundResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-H', `Host: ${HOST}`, ...(paceScript ? ['-s', paceScript] : []), `http://127.0.0.1:${port}/`];
  const cpuBefore = proxyPid === undefined ? undefined : cpuSeconds(proxyPid);
  const r = await run('wrk', args, LOAD_CORE);
  const cpuAfter = proxyPid === undefined ? undefined : cpuSeconds(proxyPid);
  if (r.code !== 0) throw new Error(`wrk exited with ${r.code}: ${r.stderr || r.stdout}`);
  const result = parseWrkOutput(r.stdout);
  const cpuUsPerRequest = cpuBefore !== undefined && cpuAfter !== undefined && result.requests > 0 ? ((cpuAfter - cpuBefore) * 1e6) / result.requests : undefined;
  return { ...result, cpuUsPerRequest };
}

const fmtRps = (n: number) => Math.round(n).toLocaleString('en-US');
const fmtMs = (n: number) => `${n.toFixed(2)}ms`;

function row(label: string, target: Target, r: Pick<WrkResult, 'requestsPerSec' | 'p50Ms' | 'p99Ms'> & { errors?: number; cpuUsPerRequest?: number }): string {
  const errors = r.errors ? `  (${r.errors} errors)` : '';
  const cpu = r.cpuUsPerRequest !== undefined && Number.isFinite(r.cpuUsPerRequest) ? `   cpu ${r.cpuUsPerRequest.toFixed(1).padStart(6)}µs/req` : '';
  return `${label.padEnd(8)} ${target.padEnd(9)} ${fmtRps(r.requestsPerSec).padStart(10)} req/s   p50 ${fmtMs(r.p50Ms).padStart(9)}   p99 ${fmtMs(r.p99Ms).padStart(9)}${cpu}${errors}`;
}

async function main(): Promise<void> {
  const options = readOptions();
  ensureTools(['nginx', 'wrk'], ['nginx', 'wrk']);
  const pin = canPin();
  if (!pin) console.log('note: not pinning to cores (needs taskset and at least 2 CPUs); numbers will be noisier');

  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-'));
  // nginx workers run as "nobody" when started by root; let them into the directory.
  chmodSync(dir, 0o755);
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);

  let cleaningUp: Promise<void> | undefined;
  const cleanup = () =>
    (cleaningUp ??= stopAll().finally(() => {
      // BENCH_KEEP=1 keeps the logs (e.g. portico's with --node-args=--trace-gc) for a look afterwards.
      if (process.env.BENCH_KEEP === '1') console.log(`kept ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    }));
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted = true;
    console.log(`\n${signal}: stopping everything`);
    void cleanup().then(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    const [upstreamPort, nginxPort, porticoPort] = [await freePort(), await freePort(), await freePort()];

    writeFileSync(join(dir, 'upstream.conf'), upstreamConfig(dir, upstreamPort));
    writeFileSync(join(dir, 'proxy.conf'), proxyConfig(dir, nginxPort, upstreamPort, options.accessLog, options.workers, options.logPipe));
    writeFileSync(join(manifests, 'bench.yaml'), porticoManifests(upstreamPort));
    // wrk calls delay() before each request on a connection: the ms to wait first.
    const paceScript = options.paceMs > 0 ? join(dir, 'pace.lua') : undefined;
    if (paceScript) writeFileSync(paceScript, `function delay()\n  return ${options.paceMs}\nend\n`);

    const upstream = startProcess('upstream nginx', 'nginx', ['-p', dir, '-c', join(dir, 'upstream.conf'), '-e', join(dir, 'upstream-error.log')], {
      core: LOAD_CORE,
      logFile: join(dir, 'upstream.log'),
    });
    const proxyCore = options.workers > 1 ? undefined : PROXY_CORE;
    // The proxies' output through a pipe read on the load core (--log-pipe), or straight to a file.
    const pipeCore = options.logPipe && options.accessLog ? LOAD_CORE : undefined;
    const porticoArgs = (bin: string, port: number, accessLog = options.accessLog) => [
      bin,
      '--manifests', manifests,
      '--http-port', String(port),
      '--bind', '127.0.0.1',
      '--https-port', '0',
      '--admin-port', '0',
      ...(accessLog ? ['--access-log=true', '--log-level', 'info'] : ['--access-log=false', '--log-level', 'warn']),
      '--shutdown-grace', '1s',
      '--workers', String(options.workers),
    ];
    const withVariant = options.variantBin !== undefined || options.variantNodeArgs.length > 0 || options.variantEnv !== undefined || options.variantLogOff;
    const variantPort = await freePort();
    const variantEnv = Object.fromEntries((options.variantEnv ?? '').split(',').filter((x) => x.includes('=')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    const targets: Target[] = withVariant ? ['nginx', 'portico', 'portico-b'] : ['nginx', 'portico'];
    const ports: Record<Target, number> = { nginx: nginxPort, portico: porticoPort, 'portico-b': variantPort };
    const logFiles: Record<Target, string> = { nginx: join(dir, 'proxy-error.log'), portico: join(dir, 'portico.log'), 'portico-b': join(dir, 'portico-b.log') };
    // The files the proxies' logs end up in (nginx's access log, or its stdout with --log-pipe;
    // portico's stdout, straight or through the pipe), emptied before each round unless
    // --keep-logs. Every writer has them open for appending, so it goes on at the new end.
    const proxyLogs = [join(dir, 'access.log'), join(dir, 'nginx.log'), logFiles.portico, logFiles['portico-b']];
    const rotateLogs = options.accessLog && !options.keepLogs;
    /** Starts a proxy and waits until it serves (its log is appended to when it is started again). */
    const startTarget = async (target: Target): Promise<Managed> => {
      const proc =
        target === 'nginx'
          ? startProcess('nginx', 'nginx', ['-p', dir, '-c', join(dir, 'proxy.conf'), '-e', join(dir, 'proxy-error.log')], { core: proxyCore, logFile: join(dir, 'nginx.log'), pipeCore })
          : target === 'portico'
            ? startProcess('portico', process.execPath, [...options.nodeArgs, ...porticoArgs(PORTICO_BIN, porticoPort)], { core: proxyCore, logFile: logFiles.portico, pipeCore })
            : startProcess('portico-b', process.execPath, [...options.variantNodeArgs, ...porticoArgs(options.variantBin ?? PORTICO_BIN, variantPort, options.accessLog && !options.variantLogOff)], {
                core: proxyCore,
                logFile: logFiles['portico-b'],
                pipeCore,
                env: { ...process.env, ...variantEnv },
              });
      await waitServing(target, ports[target], proc, logFiles[target]);
      return proc;
    };
    // One process per proxy for every round; with --fresh-process, each round starts its own.
    const procs: Record<Target, Managed | undefined> = { nginx: undefined, portico: undefined, 'portico-b': undefined };
    if (!options.freshProcess) for (const target of targets) procs[target] = await startTarget(target);
    if (upstream.child.exitCode !== null) throw new Error('the upstream nginx exited');

    const nginxVersion = spawnSync('nginx', ['-v'], { encoding: 'utf8' }).stderr.trim().replace(/^nginx version: /, '');
    const totalS = targets.length * (options.freshProcess ? options.rounds * (options.warmupS + options.durationS) : options.warmupS + options.rounds * options.durationS);
    console.log(
      `portico vs ${nginxVersion}: ${options.rounds} rounds x ${options.durationS}s each, wrk -t1 -c${options.connections}${paceScript ? `, paced (${options.paceMs} ms between a connection's requests)` : ''}, ` +
        `${pin ? `proxies on ${options.workers > 1 ? 'any core' : `core ${PROXY_CORE}`}, wrk + upstream on core ${LOAD_CORE}` : 'unpinned'}, ${options.workers} worker(s) each, access logs ${options.accessLog ? `${pipeCore !== undefined ? 'on, into a pipe read on the load core' : 'on, to a file'}${rotateLogs ? ' emptied before each round' : ' kept over the run'}` : 'off'}${withVariant ? `, portico-b: ${options.variantBin ?? 'same bin'} ${options.variantNodeArgs.join(' ')} ${options.variantEnv ?? ''}${options.variantLogOff ? ' access log off' : ''}` : ''}${options.freshProcess ? `, each proxy started anew every round (${options.warmupS}s warm-up each time)` : ''} (about ${totalS}s)\n`,
    );

    if (!options.freshProcess) for (const target of targets) await wrk(ports[target], options.warmupS, options.connections, paceScript);

    const results: Record<Target, RoundResult[]> = { nginx: [], portico: [], 'portico-b': [] };
    for (let round = 1; round <= options.rounds; round++) {
      if (rotateLogs) for (const file of proxyLogs) if (existsSync(file)) truncateSync(file, 0);
      for (const target of roundOrder(targets, round)) {
        if (options.freshProcess) {
          // A new process, warmed up as the first one is without --fresh-process; stopped after its round.
          procs[target] = await startTarget(target);
          await wrk(ports[target], options.warmupS, options.connections, paceScript);
        }
        const r = await wrk(ports[target], options.durationS, options.connections, paceScript, procs[target]!.child.pid);
        results[target].push(r);
        console.log(row(`round ${round}`, target, { ...r, errors: r.non2xx + r.socketErrors }));
        if (options.freshProcess) {
          await stopProcess(procs[target]!);
          procs[target] = undefined;
        }
      }
    }

    const summary = (target: Target) => ({
      requestsPerSec: median(results[target].map((r) => r.requestsPerSec)),
      p50Ms: median(results[target].map((r) => r.p50Ms)),
      p99Ms: median(results[target].map((r) => r.p99Ms)),
      errors: results[target].reduce((sum, r) => sum + r.non2xx + r.socketErrors, 0),
      cpuUsPerRequest: median(results[target].flatMap((r) => (r.cpuUsPerRequest === undefined ? [] : [r.cpuUsPerRequest]))),
    });
    const medians: Partial<Record<Target, ReturnType<typeof summary>>> & Record<'nginx' | 'portico', ReturnType<typeof summary>> = {
      nginx: summary('nginx'),
      portico: summary('portico'),
      ...(withVariant ? { 'portico-b': summary('portico-b') } : {}),
    };
    // The VM's speed drifts over tens of seconds, and the targets of one round ran seconds
    // apart: their ratio round by round moves less than the ratio of each side's median.
    const ratio = {
      requestsPerSec: medians.portico.requestsPerSec / medians.nginx.requestsPerSec,
      p50: medians.portico.p50Ms / medians.nginx.p50Ms,
      p99: medians.portico.p99Ms / medians.nginx.p99Ms,
      roundByRound: pairedRatios(results.portico, results.nginx),
      ...(withVariant ? { variantRoundByRound: pairedRatios(results.portico, results['portico-b']) } : {}),
    };
    const quartiles = (paired: ReturnType<typeof pairedRatios>) => `median ${paired.median.toFixed(3)}x, quartiles ${paired.lower.toFixed(3)}-${paired.upper.toFixed(3)}x`;
    console.log('');
    console.log(row('median', 'nginx', medians.nginx));
    console.log(row('median', 'portico', medians.portico));
    if (medians['portico-b']) console.log(row('median', 'portico-b', medians['portico-b']));
    const perCpu = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) ? `, requests per CPU-second ${(a / b).toFixed(2)}x` : '');
    console.log(
      `\nportico/nginx: throughput ${ratio.requestsPerSec.toFixed(2)}x${perCpu(medians.nginx.cpuUsPerRequest, medians.portico.cpuUsPerRequest)}, p50 latency ${ratio.p50.toFixed(2)}x, p99 latency ${ratio.p99.toFixed(2)}x`,
    );
    console.log(`portico/nginx throughput round by round: ${quartiles(ratio.roundByRound)}`);
    const b = medians['portico-b'];
    if (b) {
      console.log(`portico-b/nginx: throughput ${(b.requestsPerSec / medians.nginx.requestsPerSec).toFixed(2)}x${perCpu(medians.nginx.cpuUsPerRequest, b.cpuUsPerRequest)}`);
      console.log(`portico-b/portico: throughput ${(b.requestsPerSec / medians.portico.requestsPerSec).toFixed(2)}x${perCpu(medians.portico.cpuUsPerRequest, b.cpuUsPerRequest)}`);
      console.log(`portico/portico-b throughput round by round: ${quartiles(ratio.variantRoundByRound!)}`);
    }
    for (const target of targets) {
      if (medians[target]!.errors > 0) console.log(`warning: ${target} had ${medians[target]!.errors} non-2xx responses or socket errors; its numbers are suspect`);
    }

    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `nginx-compare-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    const report = {
      date: new Date().toISOString(),
      options,
      environment: {
        node: process.version,
        nginx: nginxVersion,
        cpu: cpus()[0]?.model ?? 'unknown',
        cpus: cpus().length,
        pinned: pin,
      },
      rounds: results,
      medians,
      ratio,
    };
    writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    console.log(`\nresults written to ${file}`);

    await Promise.all([...targets.flatMap((target) => (procs[target] ? [stopProcess(procs[target])] : [])), stopProcess(upstream)]);
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  if (interrupted) return;
  console.error(`bench: ${(err as Error).message}`);
  process.exitCode = 1;
});
