// Where OpenSSL's garbage from checking 10,000 TLS Secrets (src/tls/pem-check.ts) stays
// resident: checked in this process's main thread (as translation does), in a worker
// thread that then ends, or in child processes that then end (src/tls/secret-checks.ts,
// what portico does at start). Prints this process's RSS by mapping (bench/lib/smaps.ts)
// before, right after the checks and once the helpers ended, and the checks' wall time.
//   MALLOC_MMAP_THRESHOLD_=131072 node_modules/.bin/node bench/secret-checks.ts inline|thread|process [secrets=10000]
// (portico runs with that malloc setting: bin/node-flags.js.) Each Secret's PEM text is
// distinct (a leading line OpenSSL skips), one EC key and certificate, as in bench/memory.ts.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import { generate } from 'selfsigned';
import type { Secret } from '../src/model/k8s.ts';
import { checkPems, type PemCheck } from '../src/tls/pem-check.ts';
import { SecretChecks } from '../src/tls/secret-checks.ts';
import { smapsBreakdown } from './lib/smaps.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const mode = process.argv[2] ?? 'process';
const COUNT = Number(process.argv[3] ?? 10_000);
if (mode !== 'inline' && mode !== 'thread' && mode !== 'process') throw new Error(`mode is inline, thread or process, not ${mode}`);

const pems = await generate([{ name: 'commonName', value: '*.bench.test' }], { keyType: 'ec', curve: 'P-256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: '*.bench.test' }] }] });
const secrets: Secret[] = Array.from({ length: COUNT }, (_, i) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: `tls${i}`, namespace: 'bench' },
  type: 'kubernetes.io/tls',
  stringData: { 'tls.crt': `bench certificate ${i}\n${pems.cert}`, 'tls.key': `bench key ${i}\n${pems.private}` },
}));

function show(when: string): void {
  gc();
  const parts = Object.entries(smapsBreakdown(process.pid)).filter(([, mb]) => mb >= 0.5);
  console.log(`${when.padEnd(24)} RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(1)} MB: ${parts.map(([k, mb]) => `${k} ${mb.toFixed(1)}`).join(', ')}`);
}

/** The checks in one worker thread, which then ends. */
async function inThread(): Promise<PemCheck[]> {
  const source = `
    const { parentPort } = require('node:worker_threads');
    parentPort.once('message', async (pairs) => {
      const { checkPems } = await import(${JSON.stringify(new URL('../src/tls/pem-check.ts', import.meta.url).href)});
      parentPort.postMessage(pairs.map(([cert, key]) => checkPems(cert, key)));
    });`;
  const worker = new Worker(source, { eval: true });
  const answer = new Promise<PemCheck[]>((resolve) => worker.once('message', resolve));
  worker.postMessage(secrets.map((s) => [s.stringData!['tls.crt'], s.stringData!['tls.key']]));
  const checks = await answer;
  await worker.terminate();
  return checks;
}

show('before');
const t0 = performance.now();
let checks: (PemCheck | undefined)[];
let ended: Promise<void> = Promise.resolve();
if (mode === 'inline') checks = secrets.map((s) => checkPems(s.stringData!['tls.crt']!, s.stringData!['tls.key']!));
else if (mode === 'thread') checks = await inThread();
else {
  const ahead = new SecretChecks({ idleMs: 100 });
  for (const secret of secrets) ahead.add(secret);
  await ahead.settled();
  checks = secrets.map((s) => ahead.known(s));
  ended = new Promise((resolve) => {
    const poll = () => (ahead.processCount === 0 ? resolve() : setTimeout(poll, 50));
    poll();
  });
}
console.log(`${mode}: ${checks.filter((c) => c?.ok).length} of ${COUNT} checked good in ${(performance.now() - t0).toFixed(0)} ms`);
show('after the checks');
await ended;
await new Promise((resolve) => setTimeout(resolve, 1000));
show('helpers ended, 1 s on');
