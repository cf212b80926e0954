// Standalone mode: time from a new Ingress file written into a manifest directory of N
// Ingress files to the first 200 on its host, through the real CLI.
//   node_modules/.bin/node bench/standalone-latency.ts [N=10000] [samples=20]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEchoServer } from '../examples/echo-server.ts';
import { startPortico } from '../test/support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints, toYaml } from '../test/support/objects.ts';
import { get } from '../test/support/http.ts';

const existing = Number(process.argv[2] ?? 10_000);
const samples = Number(process.argv[3] ?? 20);

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-standalone-'));
const echo = await startEchoServer({ name: 'web' });
try {
  writeFileSync(join(dir, 'base.yaml'), toYaml([ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port])]));
  for (let i = 0; i < existing; i++) {
    writeFileSync(join(dir, `pre-${i}.yaml`), toYaml([ingress(`pre-${i}`, { rules: [{ host: `pre-${i}.bench`, paths: [{ path: '/', service: 'web' }] }] })]));
  }
  const started = performance.now();
  const portico = await startPortico(['--manifests', dir, '--access-log=false']);
  const startMs = performance.now() - started;
  const results: number[] = [];
  for (let s = 0; s < samples; s++) {
    const host = `new-${s}.bench`;
    const t0 = performance.now();
    writeFileSync(join(dir, `new-${s}.yaml`), toYaml([ingress(`new-${s}`, { rules: [{ host, paths: [{ path: '/', service: 'web' }] }] })]));
    while ((await get(portico.http, host, '/')).status !== 200) await new Promise((r) => setTimeout(r, 1));
    results.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 100));
  }
  await portico.stop();
  results.sort((a, b) => a - b);
  const at = (q: number) => results[Math.min(results.length - 1, Math.floor(q * results.length))]!.toFixed(1);
  console.log(`${existing} Ingress files; process start to ready ${(startMs / 1000).toFixed(1)} s`);
  console.log(`new Ingress file -> first 200: p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${results.at(-1)!.toFixed(1)} ms over ${samples} files`);
} finally {
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
}
