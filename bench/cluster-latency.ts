// Cluster mode: time from an Ingress created through the API to portico serving it,
// with N Ingresses already in the cluster. Uses the test API server (real wire
// protocol) and the real CLI. The API server and the echo pod run in processes of their
// own (bench/lib/out-of-process.ts), so that their work does not hold back the client
// that times the samples; IN_PROCESS=1 runs them in the bench's process, as before.
// Run: node bench/cluster-latency.ts [N=10000] [samples=100] [workers=1]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer } from '../test/support/kube-apiserver/index.ts';
import { startEchoServer } from '../examples/echo-server.ts';
import { inProcessApi, startApiServerProcess, startEchoProcess, type ApiServerProcess } from './lib/out-of-process.ts';
import { freePort } from '../test/support/ports.ts';
import { untilServed } from './lib/until-served.ts';
import { startPortico, type PorticoProcess } from '../test/support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints } from '../test/support/objects.ts';
import { get } from '../test/support/http.ts';
import { cpuWaits, formatSummary, machineLoad, reportTail, statusWritten, summarize, waitedBetween, type SampleWindow } from './lib/latency.ts';

const existing = Number(process.argv[2] ?? 10_000);
const samples = Number(process.argv[3] ?? 100);
const workers = process.argv[4] ?? '1';

const inProcess = process.env.IN_PROCESS === '1';
const api: ApiServerProcess = inProcess ? inProcessApi(await FakeKubeApiServer.start({ token: 'bench' })) : await startApiServerProcess();
const dir = mkdtempSync(join(tmpdir(), 'portico-bench-'));
const echo = inProcess ? await startEchoServer({ name: 'web' }) : await startEchoProcess('web');
let portico: PorticoProcess | undefined;
try {
  await api.apply([ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port])]);
  await api.apply(Array.from({ length: existing }, (_, i) => ingress(`pre-${i}`, { rules: [{ host: `pre-${i}.bench`, paths: [{ path: '/', service: 'web' }] }] })));
  const profileDir = process.env.PORTICO_CPU_PROF;
  portico = await startPortico(
    // A fixed port, as in production: workers bind it themselves (SO_REUSEPORT); through
    // port 0's round-robin every probe connection waited for the primary.
    ['--kubeconfig', await api.writeKubeconfig(dir), '--publish-address', '192.0.2.1', '--http-port', String(await freePort()), '--access-log=false', '--workers', workers],
    profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {},
    120_000,
  );
  // Steady state: the leader first writes its address into the status of every Ingress
  // (10,000 PATCHes, each coming back as a watch event); measure once that is done.
  const statusMs = await statusWritten(api);
  // Steady state: a process that has served traffic (the first request ever through a
  // fresh process costs some 30 ms of compilation and a first upstream connection).
  for (let i = 0; i < 20; i++) await get(portico.http, `pre-${i}.bench`, '/');
  const results: number[] = [];
  const floor: number[] = [];
  const windows: SampleWindow[] = [];
  const waits = cpuWaits(portico.child.pid!);
  for (let s = 0; s < samples; s++) {
    const host = `new-${s}.bench`;
    const waited0 = waits();
    const from = Date.now();
    const t0 = performance.now();
    await api.apply([ingress(`new-${s}`, { rules: [{ host, paths: [{ path: '/', service: 'web' }] }] })]);
    await untilServed(async () => (await get(portico!.http, host, '/')).status === 200);
    results.push(performance.now() - t0);
    windows.push({ name: host, from, to: Date.now(), waited: waitedBetween(waited0, waits()) });
    await new Promise((r) => setTimeout(r, 100));
    // The probe's floor: one request to a host served all along, between the samples.
    const f0 = performance.now();
    await get(portico.http, 'pre-0.bench', '/');
    floor.push(performance.now() - f0);
  }
  const serve = portico.logs.filter((l) => l.msg === 'route table updated' && typeof l.changeToServeMs === 'number').map((l) => l.changeToServeMs as number);
  const load = machineLoad();
  const logs = portico.logs;
  await portico.stop();
  portico = undefined;
  console.log(`${existing} existing Ingresses, ${samples} creations through the API, --workers ${workers}; API server and echo pod ${inProcess ? 'in the bench process' : 'in processes of their own'}; ${load}`);
  console.log(`(measured after the initial status writes to every Ingress, which took ${(statusMs / 1000).toFixed(1)} s after ready)`);
  console.log(`API write -> first 200 through portico: ${formatSummary(summarize(results))}`);
  console.log(`the probe's floor (one request to a host served all along, after each sample): ${formatSummary(summarize(floor))}`);
  if (serve.length > 0) console.log(`controller change -> table swapped (changeToServeMs): ${formatSummary(summarize(serve))}`);
  reportTail(windows, logs);
} finally {
  // Also when a wait failed: never leave portico (and its workers) running.
  await portico?.stop();
  await echo.close();
  await api.stop();
  rmSync(dir, { recursive: true, force: true });
}

