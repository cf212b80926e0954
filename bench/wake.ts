// Scale-to-zero: what a wake adds beyond the moment the EndpointSlice shows a ready
// address (target: under 50 ms). Cluster mode, the real CLI against the test API server:
// a request for the sleeping Service is held; portico scales the Deployment up; the
// bench (playing the EndpointSlice controller) publishes a ready endpoint after a boot
// delay, and measures from that write to the held request's response. Repeated over
// many wakes, each after the bench scaled the workload back to 0 and withdrew it.
// Run: node bench/wake.ts [wakes=30] [existing Ingresses=0] [workers=1]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer } from '../test/support/kube-apiserver/index.ts';
import { startEchoServer } from '../examples/echo-server.ts';
import { startPortico } from '../test/support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints } from '../test/support/objects.ts';
import { get } from '../test/support/http.ts';

const wakes = Number(process.argv[2] ?? 30);
const existing = Number(process.argv[3] ?? 0);
const workers = process.argv[4] ?? '1';
const BOOT_MS = 100;

const api = await FakeKubeApiServer.start({ token: 'bench' });
const dir = mkdtempSync(join(tmpdir(), 'portico-bench-'));
const echo = await startEchoServer({ name: 'sleepy' });
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

function slice(ready: boolean) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'sleepy-pods', namespace: 'default', labels: { 'kubernetes.io/service-name': 'sleepy' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: echo.port, protocol: 'TCP' }],
    endpoints: ready ? [{ addresses: ['127.0.0.1'], conditions: { ready: true } }] : [],
  };
}

function deployment(replicas: number) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'sleepy', namespace: 'default' },
    spec: { replicas, selector: { matchLabels: { app: 'sleepy' } }, template: { metadata: { labels: { app: 'sleepy' } }, spec: { containers: [{ name: 'app', image: 'x' }] } } },
  };
}

const replicas = () => ((api.get('Deployment', 'default', 'sleepy') as { spec?: { replicas?: number } } | undefined)?.spec?.replicas ?? 0);

try {
  api.apply(ingressClass('portico'));
  for (const o of serviceWithEndpoints('web', [echo.port])) api.apply(o);
  for (let i = 0; i < existing; i++) api.apply(ingress(`pre-${i}`, { rules: [{ host: `pre-${i}.bench`, paths: [{ path: '/', service: 'web' }] }] }));
  api.apply(ingress('sleepy', { rules: [{ host: 'sleepy.bench', paths: [{ path: '/', service: 'sleepy' }] }] }));
  api.apply({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'sleepy', namespace: 'default', annotations: { 'portico.dev/scale-to-zero': 'true', 'portico.dev/sleep-after': '1h' } },
    spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  });
  api.apply(deployment(0));
  api.apply(slice(false));
  const portico = await startPortico(['--kubeconfig', api.writeKubeconfig(dir), '--publish-address', '192.0.2.1', '--access-log=false', '--workers', workers]);
  const overhead: number[] = [];
  const total: number[] = [];
  for (let w = 0; w < wakes; w++) {
    const t0 = performance.now();
    const reply = get(portico.http, 'sleepy.bench', `/wake-${w}`, { timeoutMs: 30_000 });
    // Play the Deployment and EndpointSlice controllers: a scale-up, a boot, a ready endpoint.
    while (replicas() === 0) await delay(1);
    await delay(BOOT_MS);
    const ready = performance.now();
    api.apply(slice(true));
    const r = await reply;
    const done = performance.now();
    if (r.status !== 200) throw new Error(`wake ${w}: ${r.status} ${r.text}`);
    overhead.push(done - ready);
    total.push(done - t0);
    // Back to sleep, as portico's leader would after sleep-after.
    api.apply(slice(false));
    api.apply(deployment(0));
    await delay(300);
  }
  await portico.stop();
  const pct = (list: number[], p: number) => [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.ceil((p / 100) * list.length) - 1)]!;
  console.log(`${wakes} wakes, ${existing} other Ingresses, --workers ${workers}, boot delay ${BOOT_MS} ms`);
  console.log(`ready endpoint written -> held request answered: median ${pct(overhead, 50).toFixed(1)} ms, p99 ${pct(overhead, 99).toFixed(1)} ms, max ${Math.max(...overhead).toFixed(1)} ms (target: < 50 ms)`);
  console.log(`request sent -> answered (scale write + boot delay included): median ${pct(total, 50).toFixed(1)} ms, p99 ${pct(total, 99).toFixed(1)} ms`);
} finally {
  await echo.close();
  await api.stop();
  rmSync(dir, { recursive: true, force: true });
}
