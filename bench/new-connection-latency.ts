// New connections while the control plane works: with N Ingresses and W workers, a new
// connection every 10 ms asks a steady host for one request, for S seconds, through the
// real CLI. Shows whether what the primary does (translation, status, its idle
// collections) holds back connections the workers serve. Midway, the IngressClass
// changes (every Ingress is looked at again).
//   node_modules/.bin/node bench/new-connection-latency.ts [N=10000] [seconds=60] [workers=2]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEchoProcess } from './lib/out-of-process.ts';
import { startPortico, type PorticoProcess } from '../test/support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints, toYaml } from '../test/support/objects.ts';
import { get } from '../test/support/http.ts';
import { freePort } from '../test/support/ports.ts';
import { formatSummary, machineLoad, summarize } from './lib/latency.ts';

const existing = Number(process.argv[2] ?? 10_000);
const seconds = Number(process.argv[3] ?? 60);
const workers = process.argv[4] ?? '2';
const INTERVAL_MS = 10;

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-connections-'));
const echo = await startEchoProcess('web');
let portico: PorticoProcess | undefined;
try {
  const base = (isDefault: boolean) => toYaml([ingressClass('portico', { isDefault }), ...serviceWithEndpoints('web', [echo.port])]);
  writeFileSync(join(dir, 'base.yaml'), base(false));
  for (let i = 0; i < existing; i++) {
    writeFileSync(join(dir, `pre-${i}.yaml`), toYaml([ingress(`pre-${i}`, { rules: [{ host: `pre-${i}.bench`, paths: [{ path: '/', service: 'web' }] }] })]));
  }
  // A port of its own rather than 0: how workers share a fixed port is what is measured.
  const httpPort = await freePort();
  portico = await startPortico(['--manifests', dir, '--access-log=false', '--workers', workers, '--http-port', String(httpPort)], {}, 120_000);
  const readyAt = Date.now();
  const samples: { at: number; ms: number; status: number }[] = [];
  let changedAt = 0;
  const end = performance.now() + seconds * 1000;
  const inFlight: Promise<void>[] = [];
  while (performance.now() < end) {
    if (changedAt === 0 && performance.now() > end - (seconds * 1000) / 2) {
      changedAt = Date.now();
      writeFileSync(join(dir, 'base.yaml'), base(true));
    }
    const at = Date.now();
    const t0 = performance.now();
    inFlight.push(
      get(httpPort, 'pre-0.bench', '/')
        .then((r) => r.status, () => 0)
        .then((status) => void samples.push({ at, ms: performance.now() - t0, status })),
    );
    await new Promise((r) => setTimeout(r, INTERVAL_MS));
  }
  await Promise.all(inFlight);
  const logs = portico.logs;
  const primaryPid = portico.child.pid;
  const load = machineLoad();
  await portico.stop();
  portico = undefined;

  const failed = samples.filter((s) => s.status !== 200).length;
  console.log(`${existing} Ingresses, --workers ${workers}, a new connection every ${INTERVAL_MS} ms for ${seconds} s from ready; the IngressClass changed at ${((changedAt - readyAt) / 1000).toFixed(1)} s; ${load}`);
  console.log(`new connection -> response: ${formatSummary(summarize(samples.map((s) => s.ms)))}; ${failed} not 200`);
  // Every Ingress is looked at again after the IngressClass change, and the workers install the result: apart from the rest.
  const part = (what: string, pick: (s: (typeof samples)[number]) => boolean) => {
    const some = samples.filter(pick).map((s) => s.ms);
    if (some.length > 0) console.log(`  ${what}: ${formatSummary(summarize(some))}`);
  };
  part('before the IngressClass change', (s) => s.at < changedAt);
  part('in the 5 s from it', (s) => s.at >= changedAt && s.at < changedAt + 5000);
  part('after those 5 s', (s) => s.at >= changedAt + 5000);
  // What the primary logged that could overlap a slow sample: its idle collections and table swaps.
  const events = logs
    .filter((l) => typeof l.time === 'string' && (l.msg === 'quiet: gave unused heap memory back' || l.msg === 'route table updated'))
    .map((l) => {
      const who = l.pid === primaryPid ? 'the primary' : `worker ${String(l.pid)}`;
      return { end: Date.parse(l.time as string), what: `${l.msg === 'route table updated' ? `table swap (change -> swap ${String(l.changeToServeMs)} ms)` : `idle collection of ${String(l.ms)} ms`} in ${who}` };
    });
  for (const s of samples.filter((x) => x.ms >= 50)) {
    const near = events.filter((e) => e.end >= s.at - 50 && e.end <= s.at + s.ms + 50).map((e) => e.what);
    console.log(`  slow: ${s.ms.toFixed(0)} ms at ${((s.at - readyAt) / 1000).toFixed(1)} s${near.length > 0 ? `, near ${near.join(', ')}` : ''}`);
  }
} finally {
  await portico?.stop();
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
}
