// Churn with zero errors (issue 12): load runs on one host through the real CLI in
// standalone mode while
//   1. route churn: C changes of other Ingresses land, and B backend switches land on
//      the loaded host itself (its Ingress alternates between two Services);
//   2. endpoint churn: every pod of the loaded Service is replaced, rolling: a new pod
//      becomes ready, the old one goes not-ready, then terminating, then is removed,
//      and is stopped a little later (as a pod's preStop grace would).
// wrk counts non-2xx answers and socket errors; both should be 0.
//   node_modules/.bin/node bench/churn.ts [ingresses=2000] [seconds=10] [workers=1]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEchoServer, type EchoServer } from '../examples/echo-server.ts';
import { startPortico } from '../test/support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints, toYaml, type Obj } from '../test/support/objects.ts';
import { parseWrkOutput, type WrkResult } from './lib/wrk.ts';

const existing = Number(process.argv[2] ?? 2000);
const seconds = Number(process.argv[3] ?? 10);
const workers = process.argv[4] ?? '1';
const HOST = 'steady.bench';
const ROUTE_CHANGES = 1000;
const BACKEND_SWITCHES = 200;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function wrk(port: number, durationS: number): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', ['-t1', '-c32', `-d${durationS}s`, '--latency', '-H', `Host: ${HOST}`, `http://127.0.0.1:${port}/`]);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.on('error', reject);
    child.on('exit', () => {
      try {
        resolve(parseWrkOutput(out));
      } catch (err) {
        reject(err);
      }
    });
  });
}

/** A Service whose EndpointSlice lists these pods (port -> conditions). */
function serviceFile(name: string, pods: { port: number; ready: boolean; serving?: boolean; terminating?: boolean }[]): Obj[] {
  const objects = serviceWithEndpoints(name, pods.length > 0 ? [pods[0]!.port] : []);
  const service = objects[0]!;
  const slices: Obj[] = pods.map((p, i) => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${name}-${i}`, namespace: 'default', labels: { 'kubernetes.io/service-name': name } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: p.port, protocol: 'TCP' }],
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: p.ready, serving: p.serving ?? p.ready, terminating: p.terminating ?? false } }],
  }));
  return [service, ...slices];
}

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-churn-'));
const pods: EchoServer[] = [];
const pod = async (name: string) => {
  const echo = await startEchoServer({ name });
  pods.push(echo);
  return echo;
};
try {
  const web = [await pod('web'), await pod('web')];
  const other = await pod('web2');
  writeFileSync(join(dir, 'base.yaml'), toYaml([ingressClass('portico'), ...serviceWithEndpoints('web2', [other.port])]));
  writeFileSync(join(dir, 'web.yaml'), toYaml(serviceFile('web', web.map((p) => ({ port: p.port, ready: true })))));
  const steady = (service: string) => toYaml([ingress('steady', { rules: [{ host: HOST, paths: [{ path: '/', service }] }] })]);
  writeFileSync(join(dir, 'steady.yaml'), steady('web'));
  const other_ = (i: number, v: number) => toYaml([ingress(`pre-${i}`, { rules: [{ host: `pre-${i}.bench`, paths: [{ path: v % 2 ? '/v' : '/', service: 'web2' }] }] })]);
  for (let i = 0; i < existing; i++) writeFileSync(join(dir, `pre-${i}.yaml`), other_(i, 0));
  const portico = await startPortico(['--manifests', dir, '--access-log=false', '--workers', workers]);
  await sleep(500);

  // ---- 1. route churn ----
  const load1 = wrk(portico.http, seconds);
  const interval = (seconds * 1000 * 0.8) / (ROUTE_CHANGES + BACKEND_SWITCHES);
  for (let c = 0, s = 0; c + s < ROUTE_CHANGES + BACKEND_SWITCHES; ) {
    if (s < BACKEND_SWITCHES && (c + s) % 6 === 5) {
      writeFileSync(join(dir, 'steady.yaml'), steady(s % 2 === 0 ? 'web2' : 'web'));
      s++;
    } else {
      writeFileSync(join(dir, `pre-${c % existing}.yaml`), other_(c % existing, c + 1));
      c++;
    }
    await sleep(interval);
  }
  const r1 = await load1;
  writeFileSync(join(dir, 'steady.yaml'), steady('web'));
  await sleep(500);

  // ---- 2. endpoint churn: replace every pod of web, one by one ----
  const load2 = wrk(portico.http, seconds);
  let current = web.map((p) => ({ port: p.port, ready: true, serving: true, terminating: false }));
  const step = (seconds * 1000 * 0.8) / (web.length * 4);
  for (let i = 0; i < web.length; i++) {
    const fresh = await pod('web');
    current = [...current, { port: fresh.port, ready: true, serving: true, terminating: false }];
    writeFileSync(join(dir, 'web.yaml'), toYaml(serviceFile('web', current)));
    await sleep(step);
    const old = web[i]!.port;
    current = current.map((p) => (p.port === old ? { ...p, ready: false, serving: true, terminating: true } : p));
    writeFileSync(join(dir, 'web.yaml'), toYaml(serviceFile('web', current)));
    await sleep(step);
    current = current.filter((p) => p.port !== old);
    writeFileSync(join(dir, 'web.yaml'), toYaml(serviceFile('web', current)));
    await sleep(step);
    // The old pod stops a moment after it left the slice (its preStop grace).
    await web[i]!.close();
    await sleep(step);
  }
  const r2 = await load2;
  await portico.stop();

  const line = (name: string, r: WrkResult) =>
    `${name}: ${r.requests} requests, ${Math.round(r.requestsPerSec)} req/s, non-2xx ${r.non2xx}, socket errors ${r.socketErrors}, p99 ${r.p99Ms.toFixed(1)} ms`;
  console.log(`churn bench: ${existing} other Ingresses, --workers ${workers}, ${seconds} s per phase`);
  console.log(line(`route churn (${ROUTE_CHANGES} other Ingress changes, ${BACKEND_SWITCHES} backend switches on the loaded host)`, r1));
  console.log(line(`endpoint churn (rolling replacement of ${web.length} pods)`, r2));
} finally {
  for (const p of pods) await p.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}
