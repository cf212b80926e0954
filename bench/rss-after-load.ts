// Does portico give memory back when the load stops? Drives h2c load (h2load) through
// one portico process to an echo pod for a while, then samples the process's RSS and
// its V8 heap (from the admin /metrics) while it idles. A process whose RSS falls back
// once idle holds pages for reuse; one whose RSS stays up holds them for good.
//   node bench/rss-after-load.ts [loadSeconds=15] [idleSeconds=60] [extra node flags...]
import { spawn, spawnSync } from 'node:child_process';
import { startEchoServer } from '../examples/echo-server.ts';
import { processRss } from './lib/processes.ts';
import { startPortico } from '../test/support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../test/support/objects.ts';

const loadSeconds = Number(process.argv[2] ?? 15);
const idleSeconds = Number(process.argv[3] ?? 60);
const nodeFlags = process.argv.slice(4);

const rssMB = (pid: number): number => processRss(pid) / (1024 * 1024);

async function heapMB(admin: number): Promise<string> {
  const text = await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1e6;
  return `heap used ${read('nodejs_heap_size_used_bytes').toFixed(0)} MB of ${read('nodejs_heap_size_total_bytes').toFixed(0)} MB`;
}

if (spawnSync('sh', ['-c', 'command -v h2load'], { stdio: 'ignore' }).status !== 0) throw new Error('needs h2load (apt-get install nghttp2-client)');
const echo = await startEchoServer({ name: 'web' });
const dir = new ManifestDir();
dir.write('site.yaml', [ingressClass('portico'), ingress('web', { rules: [{ host: 'web.local', paths: [{ path: '/', service: 'web' }] }] }), ...serviceWithEndpoints('web', [echo.port])]);
const portico = await startPortico(['--manifests', dir.path, '--access-log=false'], nodeFlags.length > 0 ? { NODE_OPTIONS: nodeFlags.join(' ') } : {});
try {
  const pid = portico.child.pid!;
  console.log(`node flags: ${nodeFlags.join(' ') || '(none)'}; before load: RSS ${rssMB(pid).toFixed(0)} MB, ${await heapMB(portico.admin)}`);
  // Not spawnSync: the echo pod runs in this process, and must keep answering.
  const h2load = spawn('h2load', ['-t1', '-c10', '-m10', `-D${loadSeconds}`, '-H', ':authority: web.local', `http://127.0.0.1:${portico.http}/`]);
  let out = '';
  h2load.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  await new Promise((resolve) => h2load.once('close', resolve));
  console.log(`load: ${/finished in [^\n]+/.exec(out)?.[0] ?? out}; ${/status codes: [^\n]+/.exec(out)?.[0] ?? ''}`);
  for (let t = 0; t <= idleSeconds; t += 10) {
    console.log(`idle ${String(t).padStart(3)} s: RSS ${rssMB(pid).toFixed(0)} MB, ${await heapMB(portico.admin)}`);
    if (t < idleSeconds) await new Promise((r) => setTimeout(r, 10_000));
  }
} finally {
  await portico.stop();
  await echo.close();
  dir.cleanup();
}
