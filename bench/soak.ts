// Memory over time with route churn (issue 12: no growth over a one-hour soak): N
// Ingress files, one rewritten every `interval` ms (a new path each time, so routes
// come and go), light load on a steady host, and the RSS of every portico process
// sampled every 30 s. Bounded: it stops after `minutes`.
//   node_modules/.bin/node bench/soak.ts [ingresses=2000] [minutes=60] [workers=1] [interval=100] [rps=0]
// rps 0: wrk with 8 connections as fast as it goes; rps > 0: that many requests a second
// over 8 keep-alive connections (a light load that leaves the machine to other work).
// Each sample also splits every process's RSS (from /proc/PID/smaps): malloc's heap
// ([heap], the main arena), other anonymous memory (V8's pages, malloc's thread arenas,
// mmapped buffers) and file-backed pages (the node binary). SOAK_LOG=FILE runs portico at
// debug level and writes its log lines, but the per-change ones, there at the end.
// With rps > 0, at minute 3, every 15 minutes and at the end, the soak also pauses changes
// and load for 45 s and takes a "settled" sample: what each process keeps once it has gone
// quiet and given back what it could (src/util/idle-gc.ts). RSS under load moves with
// V8's GC schedule; the settled samples show whether what stays grows.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
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
const rps = Number(process.argv[6] ?? 0);

/** MB of a process's RSS: malloc's main heap, other anonymous, file-backed. */
function rssParts(pid: number): { heap: number; anon: number; file: number } {
  const parts = { heap: 0, anon: 0, file: 0 };
  let smaps = '';
  try {
    smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return parts;
  }
  let kind: keyof typeof parts = 'anon';
  for (const line of smaps.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      const name = head[2]!;
      kind = name === '[heap]' ? 'heap' : head[1] !== '0' && name.startsWith('/') ? 'file' : 'anon';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) parts[kind] += Number(rss[1]) / 1024;
  }
  return parts;
}

/** `perSecond` GETs a second to `host` over 8 keep-alive connections, until stopped. */
function pacedLoad(port: number, host: string, perSecond: number): { stop(): void; failures(): number } {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  let failed = 0;
  const tick = setInterval(() => {
    for (let i = 0; i < perSecond / 10; i++) {
      const req = request({ port, host: '127.0.0.1', path: '/', headers: { host }, agent }, (res) => {
        if (res.statusCode !== 200) failed++;
        res.resume();
      });
      req.on('error', () => failed++);
      req.end();
    }
  }, 100);
  return { stop: () => (clearInterval(tick), agent.destroy()), failures: () => failed };
}

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-soak-'));
const echo = await startEchoServer({ name: 'web' });
try {
  writeFileSync(join(dir, 'base.yaml'), toYaml([ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port])]));
  const file = (i: number, v: number) => toYaml([ingress(`ing-${i}`, { rules: [{ host: `h${i}.soak`, paths: [{ path: `/v${v}`, service: 'web' }, { path: '/', service: 'web' }] }] })]);
  for (let i = 0; i < count; i++) writeFileSync(join(dir, `ing-${i}.yaml`), file(i, 0));
  const portico = await startPortico(['--manifests', dir, '--access-log=false', '--workers', workers, ...(process.env.SOAK_LOG ? ['--log-level', 'debug'] : [])]);
  const load: ChildProcess | undefined = rps > 0 ? undefined : spawn('wrk', ['-t1', '-c8', `-d${minutes * 60}s`, '-H', 'Host: h0.soak', `http://127.0.0.1:${portico.http}/`], { stdio: 'ignore' });
  const end = Date.now() + minutes * 60_000;
  let changes = 0;
  const samples: { minute: number; rss: number[] }[] = [];
  let nextSample = Date.now();
  let paced = rps > 0 ? pacedLoad(portico.http, 'h0.soak', rps) : undefined;
  const settled: { minute: number; rss: number[] }[] = [];
  const settleAt = [3, ...Array.from({ length: Math.floor(minutes / 15) }, (_, k) => (k + 1) * 15).filter((m) => m < minutes)];
  let failed = 0;
  const settle = async () => {
    failed += paced!.failures();
    paced!.stop();
    // The idle collector looks every 10 s and needs one interval without clients or
    // changes after one with them: up to 30 s from here, and a process can miss a beat.
    await new Promise((r) => setTimeout(r, 45_000));
    const pids = processTree(portico.child.pid!).filter((pid) => processRss(pid) > 10 * 1024 * 1024);
    settled.push({ minute: (minutes * 60_000 - (end - Date.now())) / 60_000, rss: pids.map((pid) => processRss(pid) / (1024 * 1024)) });
    const parts = pids.map(rssParts).map((p) => `${p.heap.toFixed(0)}/${p.anon.toFixed(0)}/${p.file.toFixed(0)}`);
    console.log(`settled at ${settled.at(-1)!.minute.toFixed(1)} min: RSS ${settled.at(-1)!.rss.map((mb) => mb.toFixed(0)).join(' + ')} MB (malloc heap/other anon/file: ${parts.join(' + ')})`);
  };
  while (Date.now() < end) {
    if (paced !== undefined && settleAt.length > 0 && (minutes * 60_000 - (end - Date.now())) / 60_000 >= settleAt[0]!) {
      settleAt.shift();
      await settle();
      paced = pacedLoad(portico.http, 'h0.soak', rps);
    }
    const i = changes % count;
    writeFileSync(join(dir, `ing-${i}.yaml`), file(i, ++changes));
    if (Date.now() >= nextSample) {
      const pids = processTree(portico.child.pid!).filter((pid) => processRss(pid) > 10 * 1024 * 1024);
      samples.push({ minute: (minutes * 60_000 - (end - Date.now())) / 60_000, rss: pids.map((pid) => processRss(pid) / (1024 * 1024)) });
      const parts = pids.map(rssParts).map((p) => `${p.heap.toFixed(0)}/${p.anon.toFixed(0)}/${p.file.toFixed(0)}`);
      console.log(`${samples.at(-1)!.minute.toFixed(1)} min: ${changes} changes, RSS ${samples.at(-1)!.rss.map((mb) => mb.toFixed(0)).join(' + ')} MB (malloc heap/other anon/file: ${parts.join(' + ')})`);
      nextSample += 30_000;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  load?.kill();
  if (paced !== undefined) await settle();
  if (process.env.SOAK_LOG) writeFileSync(process.env.SOAK_LOG, portico.logs.filter((l) => l.msg !== 'route table updated' && l.msg !== 'route table installed from the primary' && !String(l.msg).startsWith('objects changed')).map((l) => JSON.stringify(l) + '\n').join(''));
  if (paced !== undefined) console.log(`paced load: ${failed} failed requests`);
  await portico.stop();
  const first = samples[1] ?? samples[0]!;
  const last = samples.at(-1)!;
  const total = (s: { rss: number[] }) => s.rss.reduce((a, b) => a + b, 0);
  console.log(`soak: ${count} Ingresses, --workers ${workers}, ${changes} changes in ${minutes} min; total RSS ${total(first).toFixed(0)} MB at ${first.minute.toFixed(1)} min -> ${total(last).toFixed(0)} MB at the end (max ${Math.max(...samples.map(total)).toFixed(0)} MB)`);
  if (settled.length > 1) console.log(`settled RSS: ${settled.map((x) => `${total(x).toFixed(0)} MB at ${x.minute.toFixed(0)} min`).join(', ')}`);
} finally {
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
}
