// What a portico process keeps while it stays quiet after a burst of changes: N Ingress
// files, `changes` rewrites 50 ms apart, then `quietSeconds` with no change and no client.
// Prints the primary's V8 heap every 10 s (the idle collector's debug line), its idle
// collections and its RSS at the end. In a quiet process only background work allocates:
// the manifest source's safety-net rescan (bench/rescan-garbage.ts), whose survivors made
// V8 regrow the young generation after the idle collection had shrunk it.
//   node_modules/.bin/node bench/quiet-heap.ts [ingresses=2000] [quietSeconds=150] [workers=2] [changes=600]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEchoServer } from '../examples/echo-server.ts';
import { startPortico } from '../test/support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints, toYaml } from '../test/support/objects.ts';

const count = Number(process.argv[2] ?? 2000);
const quietSeconds = Number(process.argv[3] ?? 150);
const workers = process.argv[4] ?? '2';
const changes = Number(process.argv[5] ?? 600);

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-quiet-'));
const echo = await startEchoServer({ name: 'web' });
try {
  writeFileSync(join(dir, 'base.yaml'), toYaml([ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port])]));
  const file = (i: number, v: number) => toYaml([ingress(`ing-${i}`, { rules: [{ host: `h${i}.soak`, paths: [{ path: `/v${v}`, service: 'web' }, { path: '/', service: 'web' }] }] })]);
  for (let i = 0; i < count; i++) writeFileSync(join(dir, `ing-${i}.yaml`), file(i, 0));
  const portico = await startPortico(['--manifests', dir, '--access-log=false', '--workers', workers, '--log-level', 'debug'], {}, 60_000);
  const pid = portico.child.pid!;
  for (let v = 1; v <= changes; v++) {
    writeFileSync(join(dir, `ing-${v % count}.yaml`), file(v % count, v));
    await new Promise((r) => setTimeout(r, 50));
  }
  const quietFrom = new Date().toISOString();
  await new Promise((r) => setTimeout(r, quietSeconds * 1000));
  const rssMB = Number(/^Rss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))![1]) / 1024;
  const lines = portico.logs.filter((l) => l.pid === pid && (l.msg === 'idle collector: looked' || l.msg === 'quiet: gave unused heap memory back'));
  for (const l of lines) {
    const at = String(l.time).slice(11, 19);
    if (l.msg === 'idle collector: looked') console.log(`${at} heap ${l.heapMB} MB${l.changed ? ' (changes)' : ''}`);
    else console.log(`${at} idle collection: ${l.heapBeforeMB} -> ${l.heapAfterMB} MB, ${l.liveMB} MB live, ${l.flavor}, ${l.ms} ms`);
  }
  // From the quiet spell's first idle collection on: what the process keeps once it gave back.
  const first = lines.findIndex((l) => l.msg !== 'idle collector: looked' && String(l.time) > quietFrom);
  const quiet = lines.slice(first + 1).filter((l) => l.msg === 'idle collector: looked').map((l) => Number(l.heapMB));
  if (first < 0 || quiet.length === 0) throw new Error('no idle collection in the quiet spell: make it longer');
  await portico.stop();
  console.log(`quiet heap: ${count} Ingresses, --workers ${workers}: ${workers === '1' ? 'the process' : 'the primary'}'s heap ${Math.min(...quiet)}-${Math.max(...quiet)} MB after its idle collection, ${quietSeconds} s without changes, RSS ${rssMB.toFixed(1)} MB at the end (load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})`);
} finally {
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
}
