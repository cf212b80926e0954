// Memory over time with route churn (issue 12: no growth over a one-hour soak): N
// Ingress files, one rewritten every `interval` ms (a new path each time, so routes
// come and go), light load on a steady host, and the RSS of every portico process
// sampled every 30 s. Bounded: it stops after `minutes`.
//   node_modules/.bin/node bench/soak.ts [ingresses=2000] [minutes=60] [workers=1] [interval=100]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEchoServer } from '../examples/echo-server.ts';
import { processRss, processTree } from './lib/processes.ts';
import { startPortico } from '../test/support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints, toYaml } from '../test/support/objects.ts';

const count = Number(process.argv[2] ?? 2000);
const minutes = Number(process.argv[3] ?? 60);
const workers = process.argv[4] ?? '1';
const intervalMs = Number(process.argv[5] ?? 100);

/** RSS in MB of a process and its children (the workers). */
const rssTree = (pid: number): number[] => processTree(pid).map((p) => processRss(p) / (1024 * 1024));

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-soak-'));
const echo = await startEchoServer({ name: 'web' });
try {
  writeFileSync(join(dir, 'base.yaml'), toYaml([ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port])]));
  const file = (i: number, v: number) => toYaml([ingress(`ing-${i}`, { rules: [{ host: `h${i}.soak`, paths: [{ path: `/v${v}`, service: 'web' }, { path: '/', service: 'web' }] }] })]);
  for (let i = 0; i < count; i++) writeFileSync(join(dir, `ing-${i}.yaml`), file(i, 0));
  const portico = await startPortico(['--manifests', dir, '--access-log=false', '--workers', workers]);
  const load = spawn('wrk', ['-t1', '-c8', `-d${minutes * 60}s`, '-H', 'Host: h0.soak', `http://127.0.0.1:${portico.http}/`], { stdio: 'ignore' });
  const end = Date.now() + minutes * 60_000;
  let changes = 0;
  const samples: { minute: number; rss: number[] }[] = [];
  let nextSample = Date.now();
  while (Date.now() < end) {
    const i = changes % count;
    writeFileSync(join(dir, `ing-${i}.yaml`), file(i, ++changes));
    if (Date.now() >= nextSample) {
      samples.push({ minute: (minutes * 60_000 - (end - Date.now())) / 60_000, rss: rssTree(portico.child.pid!).filter((mb) => mb > 10) });
      console.log(`${samples.at(-1)!.minute.toFixed(1)} min: ${changes} changes, RSS ${samples.at(-1)!.rss.map((mb) => mb.toFixed(0)).join(' + ')} MB`);
      nextSample += 30_000;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  load.kill();
  await portico.stop();
  const first = samples[1] ?? samples[0]!;
  const last = samples.at(-1)!;
  const total = (s: { rss: number[] }) => s.rss.reduce((a, b) => a + b, 0);
  console.log(`soak: ${count} Ingresses, --workers ${workers}, ${changes} changes in ${minutes} min; total RSS ${total(first).toFixed(0)} MB at ${first.minute.toFixed(1)} min -> ${total(last).toFixed(0)} MB at the end (max ${Math.max(...samples.map(total)).toFixed(0)} MB)`);
} finally {
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
}
