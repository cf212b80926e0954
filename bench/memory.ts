// Resident memory of portico through the real CLI, per process (primary and workers),
// after it has been ready and idle for a while (issue 12: < 64 MiB idle, < 200 MiB at
// 10,000 Ingresses).
//   node_modules/.bin/node bench/memory.ts idle  [workers=1] [settleSeconds=20] [node flags...]
//   node_modules/.bin/node bench/memory.ts scale [workers=1] [settleSeconds=20] [node flags...]
//   node_modules/.bin/node bench/memory.ts cluster [workers=1] [settleSeconds=20] [node flags...]
// idle: the bundled example (examples/hello) plus 100 Ingresses; scale: 10,000 Ingresses
// of two hosts each (20,000 hosts), 10,000 Services and 10,000 EndpointSlices of 5 pods
// (50,000 endpoints), one file per Ingress with its Service and slice; cluster: the same
// objects served by the test API server (test/support/kube-apiserver, in a process of its
// own: bench/lib/out-of-process.ts) and portico in cluster mode, measured once the leader
// has written every Ingress's status (with AFTER_IDLE_GC=1: from the first idle collection
// after that). BENCH_TLS=1 (scale and cluster): each Ingress also has TLS for its two hosts,
// with a Secret of its own whose PEM text differs from every other (one EC key and
// certificate, behind a distinct leading line that OpenSSL skips), so each process parses
// and builds a context per Secret, as with 10,000 certificates from cert-manager. The compiled
// JavaScript runs when dist/ exists and NODE_ENV=production (run `npm run build` first),
// as in the container image; otherwise the TypeScript sources. Node flags go on node's
// command line, as the image's ENTRYPOINT puts them, and the workers inherit them.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { closeSync, cpSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { processRss, processTree } from './lib/processes.ts';
import { startApiServerProcess, type ApiServerProcess } from './lib/out-of-process.ts';
import { statusWritten } from './lib/latency.ts';
import { smapsBreakdown } from './lib/smaps.ts';
import { ingress, tlsSecret, toYaml, type Obj } from '../test/support/objects.ts';
import { generate } from 'selfsigned';

const mode = process.argv[2] ?? 'idle';
const workers = process.argv[3] ?? '1';
const settleSeconds = Number(process.argv[4] ?? 20);
const nodeFlags = process.argv.slice(5);
if (mode !== 'idle' && mode !== 'scale' && mode !== 'cluster') throw new Error(`mode is "idle", "scale" or "cluster", not "${mode}"`);

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// PORTICO_BIN=path/bin/portico.js: another checkout (an A/B in the same hour).
const compiled = process.env.NODE_ENV === 'production' && existsSync(join(process.env.PORTICO_BIN ? join(process.env.PORTICO_BIN, '../..') : ROOT, 'dist/cli.js'));

function service(name: string, namespace: string, addresses: string[]): Obj[] {
  return [
    { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] } },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-abc`, namespace, labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      endpoints: addresses.map((a) => ({ addresses: [a], conditions: { ready: true } })),
    },
  ];
}

const pems =
  process.env.BENCH_TLS === '1'
    ? await generate([{ name: 'commonName', value: '*.bench.test' }], { keyType: 'ec', curve: 'P-256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: '*.bench.test' }] }] })
    : undefined;

/** BENCH_POLICIES: "1" (all) or some of rate,cors,body,ip,nginx. */
const POLICY_ANNOTATIONS = (i: number): [string, string, string][] => [
  ['rate', 'portico.dev/rate-limit', '20'],
  ['cors', 'portico.dev/cors-allow-origins', `https://app${i}.bench.test`],
  ['body', 'portico.dev/max-body-size', '8m'],
  ['ip', 'portico.dev/ip-allow', '10.0.0.0/8, 192.168.0.0/16'],
  ['nginx', 'nginx.ingress.kubernetes.io/proxy-body-size', '8m'],
  ['nginx', 'nginx.ingress.kubernetes.io/ssl-redirect', 'false'],
];
const policies = new Set(process.env.BENCH_POLICIES === '1' ? ['rate', 'cors', 'body', 'ip', 'nginx'] : (process.env.BENCH_POLICIES ?? '').split(',').filter(Boolean));

/** The i-th of the 10,000 Ingresses of the scale and cluster modes, with its Service and EndpointSlice (and TLS Secret). */
function scaleObjects(i: number): Obj[] {
  const ns = `ns${i % 100}`;
  const addresses = [1, 2, 3, 4, 5].map((p) => `10.${(i >> 8) & 255}.${i & 255}.${p}`);
  const hosts = [`app${i}.bench.test`, `www${i}.bench.test`];
  const rules = hosts.map((host) => ({ host, paths: [{ path: '/', service: `svc${i}` }, { path: '/api', pathType: 'Exact', service: `svc${i}` }] }));
  const annotations = policies.size === 0 ? undefined : Object.fromEntries(POLICY_ANNOTATIONS(i).filter(([kind]) => policies.has(kind)).map(([, name, value]) => [name, value]));
  if (pems === undefined) return [ingress(`ing${i}`, { rules }, { namespace: ns, annotations }), ...service(`svc${i}`, ns, addresses)];
  const secret = tlsSecret(`ing${i}-tls`, `bench certificate ${i}\n${pems.cert}`, `bench key ${i}\n${pems.private}`, ns);
  return [ingress(`ing${i}`, { rules, tls: [{ hosts, secretName: `ing${i}-tls` }] }, { namespace: ns, annotations }), secret, ...service(`svc${i}`, ns, addresses)];
}
/** GET / on each host of the scale objects, 50 at a time, over keep-alive; the statuses counted. */
async function touchEveryHost(port: number): Promise<Record<string, number>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
  const counts: Record<string, number> = {};
  const hosts = Array.from({ length: 10_000 }, (_, i) => [`app${i}.bench.test`, `www${i}.bench.test`]).flat();
  let next = 0;
  const one = (host: string) =>
    new Promise<void>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { host }, agent, timeout: 10_000 }, (res) => {
        res.resume();
        res.on('end', () => {
          counts[res.statusCode!] = (counts[res.statusCode!] ?? 0) + 1;
          resolve();
        });
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (err) => {
        counts[err.message] = (counts[err.message] ?? 0) + 1;
        resolve();
      });
    });
  await Promise.all(Array.from({ length: 50 }, async () => {
    while (next < hosts.length) await one(hosts[next++]!);
  }));
  agent.destroy();
  return counts;
}

const ingressClass: Obj = { apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'portico' }, spec: { controller: 'portico.dev/ingress-controller' } };

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-memory-'));
let pid: number | undefined;
let api: ApiServerProcess | undefined;
try {
  if (mode === 'idle') {
    cpSync(join(ROOT, 'examples/hello'), dir, { recursive: true });
    const objects: Obj[] = [];
    for (let i = 0; i < 100; i++) objects.push(ingress(`extra-${i}`, { rules: [{ host: `extra-${i}.local`, paths: [{ path: '/', service: 'hello', port: 'http' }] }] }));
    writeFileSync(join(dir, 'extra.yaml'), toYaml(objects));
  } else if (mode === 'scale') {
    writeFileSync(join(dir, 'class.yaml'), toYaml([ingressClass]));
    for (let i = 0; i < 10_000; i++) writeFileSync(join(dir, `app-${i}.yaml`), toYaml(scaleObjects(i)));
  } else {
    api = await startApiServerProcess();
    await api.apply([ingressClass]);
    for (let i = 0; i < 10_000; i += 500) await api.apply(Array.from({ length: 500 }, (_, j) => scaleObjects(i + j)).flat());
  }
  const source = api ? ['--kubeconfig', await api.writeKubeconfig(dir), '--publish-address', '192.0.2.1'] : ['--manifests', dir];
  // HEAP_SNAPSHOT_DIR=DIR: also write a heap snapshot of the primary there after the settle time.
  const snapshotDir = process.env.HEAP_SNAPSHOT_DIR;
  // AFTER_IDLE_GC=1: the settle time starts once every process (the primary and each
  // worker) has had an idle collection after ready (src/util/idle-gc.ts; its log line)
  // rather than at ready: RSS a fixed time after ready swings by 20-40 MB at 10,000
  // Ingresses with whether that has run yet. A worker may collect before ready too
  // (waiting for its first config), which does not count.
  const afterIdleGc = process.env.AFTER_IDLE_GC === '1';
  const processes = workers === '1' ? 1 : 1 + Number(workers);
  const collectedAfterReady = new Set<number>();
  let ready = false;
  let statusDone = api === undefined;
  let idleGcSeen: () => void = () => {};
  const idleGc = new Promise<void>((resolve) => (idleGcSeen = resolve));
  /** The first table's translation and build, from the controller's log line. */
  let firstTable: { translateMs: number; buildMs: number } | undefined;
  /** How long the first translation waited for TLS Secrets checked in other threads (src/tls/secret-checks.ts). */
  let checkedAhead: number | undefined;
  let httpPort = 0;
  const args = [...nodeFlags, ...(snapshotDir ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`] : []), process.env.PORTICO_BIN ?? join(ROOT, 'bin/portico.js'), ...source, '--workers', workers, '--http-port', '0', '--https-port', '0', '--admin-port', '0', '--bind', '127.0.0.1', '--access-log=false', ...(afterIdleGc ? ['--log-level', 'debug'] : []), ...(process.env.PORTICO_ARGS?.split(' ').filter(Boolean) ?? [])];
  const t0 = performance.now();
  const child = spawn(join(ROOT, 'node_modules/.bin/node'), args, { stdio: ['ignore', 'pipe', 'inherit'], env: process.env });
  pid = child.pid!;
  const admin = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('not ready within 180 s')), 180_000);
    child.once('exit', (code) => reject(new Error(`portico exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (process.env.PORTICO_ARGS !== undefined && !line.includes('"route table')) console.log(line.slice(0, 300));
      if (line.includes('gave unused heap memory back') && ready && statusDone) {
        collectedAfterReady.add((JSON.parse(line) as { pid: number }).pid);
        if (collectedAfterReady.size >= processes) idleGcSeen();
      }
      if (firstTable === undefined && line.includes('"route table updated')) firstTable = JSON.parse(line) as { translateMs: number; buildMs: number };
      if (checkedAhead === undefined && line.includes('"TLS Secrets checked ahead')) checkedAhead = (JSON.parse(line) as { waitedMs: number }).waitedMs;
      if (line.includes('"portico ready')) {
        ready = true;
        clearTimeout(timer);
        const readyLine = JSON.parse(line) as { admin: number; http: number };
        httpPort = readyLine.http;
        resolve(readyLine.admin);
      }
    });
  });
  const readyMs = performance.now() - t0;
  // BENCH_TOUCH=1 (scale, cluster): one request to "/" of each of the 20,000 hosts before the
  // settle time, so every one of those routes is compiled, as a crawler would make them.
  if (process.env.BENCH_TOUCH === '1' && mode !== 'idle') {
    const touched = await touchEveryHost(httpPort);
    console.log(`touched 20,000 hosts: ${Object.entries(touched).map(([status, n]) => `${n} × ${status}`).join(', ')}`);
  }
  // Cluster mode: the leader's first status write to every Ingress (10,000 PATCHes, each
  // coming back as a watch event) is part of reaching the steady state.
  if (api) {
    const statusMs = await statusWritten(api);
    statusDone = true;
    console.log(`every Ingress's status written ${(statusMs / 1000).toFixed(1)} s after ready`);
  }
  if (afterIdleGc) {
    const waited = performance.now();
    await Promise.race([idleGc, new Promise((r) => setTimeout(r, 180_000).unref())]); // unref: it kept the bench alive 3 minutes after its last line
    console.log(`idle collection of ${collectedAfterReady.size} of ${processes} processes ${((performance.now() - waited) / 1000).toFixed(1)} s after ready`);
  }
  const rss = () =>
    processTree(pid!)
      .map((p) => processRss(p) / (1024 * 1024))
      .filter((mb) => mb > 5);
  let peak = rss();
  for (let t = 0; t < settleSeconds; t++) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = rss();
    if (now.reduce((a, b) => a + b, 0) > peak.reduce((a, b) => a + b, 0)) peak = now;
  }
  const final = rss();
  const fmt = (list: number[]) => list.map((mb) => mb.toFixed(1)).join(' + ');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
  console.log(
    `${mode}${pems ? ' with TLS (a certificate per Ingress)' : ''}${policies.size > 0 ? ` with policies (${[...policies].join(',')})` : ''}, --workers ${workers}, ${compiled ? 'compiled (dist/)' : 'sources (type stripping)'}, node flags: ${nodeFlags.join(' ') || '(none)'}; ` +
      `ready in ${(readyMs / 1000).toFixed(1)} s (first table: ${checkedAhead === undefined ? '' : `waited ${checkedAhead} ms for TLS checks, `}translation ${firstTable?.translateMs ?? '?'} ms, build ${firstTable?.buildMs ?? '?'} ms); RSS after ${settleSeconds} s: ${fmt(final)} MB (primary first; peak seen ${fmt(peak)}; the primary's is ${kb('RssAnon').toFixed(1)} MB anonymous, ${kb('RssFile').toFixed(1)} MB file-backed: Node's own code); load ${loadavg()[0]!.toFixed(1)}`,
  );
  // PSS splits the pages processes share (the node binary's, mapped by the primary and
  // every worker) among them: what one more worker costs, where RSS counts them in each.
  const rollup = (p: number, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? NaN) / 1024;
  const tree = processTree(pid).filter((p) => processRss(p) > 5 * 1024 * 1024);
  console.log(`per process (primary first): PSS ${tree.map((p) => rollup(p, 'Pss').toFixed(1)).join(' + ')} MB, anonymous ${tree.map((p) => rollup(p, 'Anonymous').toFixed(1)).join(' + ')} MB`);
  const parts = Object.entries(smapsBreakdown(pid)).sort((a, b) => b[1] - a[1]);
  console.log(`primary RSS by mapping: ${parts.map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')} MB`);
  // The primary's V8 heap, from its own /metrics (prom-client's default metrics).
  const metrics = await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();
  const gauge = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(metrics)?.[1] ?? NaN) / (1024 * 1024);
  const space = (kind: string, name: string) => Number(new RegExp(`^nodejs_heap_space_size_${kind}_bytes\\{space="${name}"\\} (\\S+)`, 'm').exec(metrics)?.[1] ?? NaN) / (1024 * 1024);
  const spaces = ['new', 'old', 'code', 'large_object']
    .map((name) => `${name} ${space('used', name).toFixed(0)}/${space('total', name).toFixed(0)}`)
    .join(', ');
  console.log(`primary heap: ${gauge('nodejs_heap_size_used_bytes').toFixed(1)} MB used of ${gauge('nodejs_heap_size_total_bytes').toFixed(1)} MB (${spaces}), external ${gauge('nodejs_external_memory_bytes').toFixed(1)} MB`);
  if (snapshotDir) {
    const before = new Set(readdirSync(snapshotDir));
    process.kill(pid, 'SIGUSR2');
    let file: string | undefined;
    while ((file = readdirSync(snapshotDir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'))) === undefined) await new Promise((r) => setTimeout(r, 500));
    // The file appears before it is complete, and its writing pauses: wait until it ends
    // as the JSON does (a fixed 5 s wait cut a 280 MB snapshot short on a busy machine).
    const path = join(snapshotDir, file);
    const complete = () => {
      const size = statSync(path).size;
      if (size < 2) return false;
      const tail = Buffer.alloc(2);
      const fd = openSync(path, 'r');
      readSync(fd, tail, 0, 2, size - 2);
      closeSync(fd);
      return tail.toString() === ']}';
    };
    while (!complete()) await new Promise((r) => setTimeout(r, 1000));
    console.log(`heap snapshot written to ${snapshotDir}; RSS after it (a full GC): ${fmt(rss())} MB`);
  }
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  pid = undefined;
} finally {
  if (pid !== undefined) process.kill(pid, 'SIGKILL');
  await api?.stop();
  rmSync(dir, { recursive: true, force: true });
}
