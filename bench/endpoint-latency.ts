// Endpoint changes: time from an EndpointSlice change (the Service's only ready pod
// replaced by another) to the first request that reaches the new pod, with N Ingresses
// on one Service and the changing Service's Ingress among them. Through the real CLI,
// in cluster mode (the test API server) or standalone (the slice's file rewritten).
// Run: node bench/endpoint-latency.ts [N=10000] [samples=100] [workers=1] [cluster|standalone]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer } from '../test/support/kube-apiserver/index.ts';
import { startEchoServer } from '../examples/echo-server.ts';
import { inProcessApi, startApiServerProcess, startEchoProcess } from './lib/out-of-process.ts';
import { freePort } from '../test/support/ports.ts';
import { untilServed } from './lib/until-served.ts';
import { startPortico, type PorticoProcess } from '../test/support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints, toYaml } from '../test/support/objects.ts';
import { get } from '../test/support/http.ts';
import { cpuWaits, formatSummary, machineLoad, reportTail, statusWritten, summarize, waitedBetween, type SampleWindow } from './lib/latency.ts';

const existing = Number(process.argv[2] ?? 10_000);
const samples = Number(process.argv[3] ?? 100);
const workers = process.argv[4] ?? '1';
const mode = process.argv[5] ?? 'cluster';
if (mode !== 'cluster' && mode !== 'standalone') throw new Error(`mode must be cluster or standalone, not ${mode}`);

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-endpoints-'));
// The API server and the pods run in processes of their own (bench/lib/out-of-process.ts);
// IN_PROCESS=1 runs them in the bench's process, beside the client that times the samples.
const inProcess = process.env.IN_PROCESS === '1';
const api = mode === 'cluster' ? (inProcess ? inProcessApi(await FakeKubeApiServer.start({ token: 'bench' })) : await startApiServerProcess()) : undefined;
const echo = (name: string) => (inProcess ? startEchoServer({ name }) : startEchoProcess(name));
const web = await echo('web');
const pods = [await echo('moving'), await echo('moving')];

/** The "moving" Service's slice with only pod `i` ready. */
const slice = (i: number) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'moving-pods', namespace: 'default', labels: { 'kubernetes.io/service-name': 'moving' } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port: pods[i]!.port, protocol: 'TCP' }],
  endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
});
const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'moving', namespace: 'default' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] } };
const movingIngress = ingress('moving', { rules: [{ host: 'moving.bench', paths: [{ path: '/', service: 'moving' }] }] });
const manifests = join(dir, 'manifests');

const publish = async (i: number) => {
  if (api !== undefined) await api.apply([slice(i)]);
  else writeFileSync(join(manifests, 'moving-slice.yaml'), toYaml([slice(i)]));
};

let portico: PorticoProcess | undefined;
try {
  const base = [ingressClass('portico'), ...serviceWithEndpoints('web', [web.port]), service, movingIngress];
  const others = Array.from({ length: existing }, (_, i) => ingress(`pre-${i}`, { rules: [{ host: `pre-${i}.bench`, paths: [{ path: '/', service: 'web' }] }] }));
  let args: string[];
  if (api !== undefined) {
    await api.apply([...base, ...others]);
    args = ['--kubeconfig', await api.writeKubeconfig(dir), '--publish-address', '192.0.2.1'];
  } else {
    (await import('node:fs')).mkdirSync(manifests);
    writeFileSync(join(manifests, 'base.yaml'), toYaml(base));
    for (let i = 0; i < others.length; i++) writeFileSync(join(manifests, `pre-${i}.yaml`), toYaml([others[i]!]));
    args = ['--manifests', manifests];
  }
  await publish(0);
  const profileDir = process.env.PORTICO_CPU_PROF;
  // A fixed port, as in production: workers bind it themselves (SO_REUSEPORT); through
  // port 0's round-robin every probe connection waited for the primary.
  const started = await startPortico([...args, '--http-port', String(await freePort()), '--access-log=false', '--workers', workers], profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}, 120_000);
  portico = started;
  const podOf = async () => {
    const reply = await get(started.http, 'moving.bench', '/').catch(() => undefined);
    return reply?.status === 200 ? reply.json<{ pod: string }>().pod : undefined;
  };
  while ((await podOf()) !== `moving-${pods[0]!.port}`) await new Promise((r) => setTimeout(r, 10));

  // Steady state: after the leader's first status writes to every Ingress.
  if (api !== undefined) await statusWritten(api);
  const results: number[] = [];
  const floor: number[] = [];
  const windows: SampleWindow[] = [];
  const waits = cpuWaits(portico.child.pid!);
  for (let s = 1; s <= samples; s++) {
    const next = s % 2;
    const wanted = `moving-${pods[next]!.port}`;
    const waited0 = waits();
    const from = Date.now();
    const t0 = performance.now();
    await publish(next);
    await untilServed(async () => (await podOf()) === wanted);
    results.push(performance.now() - t0);
    windows.push({ name: `change ${s}`, from, to: Date.now(), waited: waitedBetween(waited0, waits()) });
    await new Promise((r) => setTimeout(r, 100));
    // The probe's floor: one request once the change is in (the host is served all along).
    const f0 = performance.now();
    await podOf();
    floor.push(performance.now() - f0);
  }
  const load = machineLoad();
  const logs = portico.logs;
  await portico.stop();
  portico = undefined;
  console.log(`${mode}, ${existing} other Ingresses, ${samples} EndpointSlice changes, --workers ${workers}; ${inProcess ? "API server and pods in the bench process" : "API server and pods in processes of their own"}; ${load}`);
  console.log(`EndpointSlice change -> first request on the new pod: ${formatSummary(summarize(results))}`);
  console.log(`the probe's floor (one request to the same host once the change is in, after each sample): ${formatSummary(summarize(floor))}`);
  reportTail(windows, logs);
} finally {
  // Also when a wait failed: never leave portico (and its workers) running.
  await portico?.stop();
  for (const server of [web, ...pods]) await server.close();
  await api?.stop();
  rmSync(dir, { recursive: true, force: true });
}
