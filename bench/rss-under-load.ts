// RSS of portico under HTTP/1.1 load and after it (issue 12: < 128 MiB per process under
// load): one route to an echo pod (a process of its own), wrk with 64 keep-alive
// connections, the RSS of every portico process sampled each second, then 25 s after.
// Runs the compiled JavaScript (run `npm run build` first), as the image does.
//   node_modules/.bin/node bench/rss-under-load.ts [workers=1] [loadSeconds=15]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEchoProcess } from './lib/out-of-process.ts';
import { processRss, processTree } from './lib/processes.ts';
import { get } from '../test/support/http.ts';
import { freePort } from '../test/support/ports.ts';
import { ingress, ingressClass, serviceWithEndpoints, toYaml } from '../test/support/objects.ts';

const workers = process.argv[2] ?? '1';
const loadSeconds = Number(process.argv[3] ?? 15);
if (spawnSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }).status !== 0) throw new Error('needs wrk (apt-get install wrk)');
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const echo = await startEchoProcess('web');
const dir = mkdtempSync(join(tmpdir(), 'portico-rss-load-'));
writeFileSync(join(dir, 'web.yaml'), toYaml([ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port]), ingress('web', { rules: [{ host: 'web.local', paths: [{ path: '/', service: 'web' }] }] })]));
const port = await freePort();
const child = spawn(join(ROOT, 'node_modules/.bin/node'), [join(ROOT, 'bin/portico.js'), '--manifests', dir, '--workers', workers, '--http-port', String(port), '--https-port', '0', '--admin-port', '0', '--bind', '127.0.0.1', '--access-log=false'], {
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, NODE_ENV: 'production' },
});
try {
  // Ready when it answers on the route (fetch cannot set Host).
  for (let i = 0; ; i++) {
    const ok = await get(port, 'web.local').then((r) => r.status === 200, () => false);
    if (ok) break;
    if (i > 300) throw new Error('portico did not serve web.local within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  /** RSS of each portico process (primary first), MB. */
  const rss = () => processTree(child.pid!).map((pid) => processRss(pid) / 1048576).filter((mb) => mb > 20);
  const show = (mbs: number[]) => mbs.map((mb) => mb.toFixed(1)).join(' + ');
  await new Promise((r) => setTimeout(r, 5000));
  console.log(`--workers ${workers}, compiled; idle before the load: ${show(rss())} MB`);
  const samples: number[][] = [];
  const timer = setInterval(() => samples.push(rss()), 1000);
  await new Promise((r) => spawn('wrk', ['-t2', '-c64', `-d${loadSeconds}s`, '-H', 'Host: web.local', `http://127.0.0.1:${port}/`], { stdio: 'ignore' }).on('exit', r));
  clearInterval(timer);
  const peak = samples[0]!.map((_, i) => Math.max(...samples.map((s) => s[i] ?? 0)));
  console.log(`under load (${loadSeconds} s, 64 connections): highest per process ${show(peak)} MB; last sample ${show(samples.at(-1)!)} MB`);
  await new Promise((r) => setTimeout(r, 25_000));
  console.log(`25 s after the load: ${show(rss())} MB; load ${loadavg()[0]!.toFixed(2)}`);
} finally {
  child.kill('SIGTERM');
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
}
