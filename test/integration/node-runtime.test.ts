// How bin/portico.js starts Node, seen from outside: the young generation's cap and
// glibc's fixed mmap threshold (bin/node-flags.js), and V8's compilers off until each
// process has work (src/util/compilers.ts), however portico is started, as in the
// container image, its workers included; a user's own malloc setting or compiler flag is
// kept.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { NODE_FLAGS } from '../../bin/node-flags.js';

const dir = mkdtempSync(join(tmpdir(), 'portico-runtime-'));
const started: PorticoProcess[] = [];
after(async () => {
  await Promise.all(started.map((p) => p.stop()));
  rmSync(dir, { recursive: true, force: true });
});

/** The environment and command line of a running process. */
function processOf(pid: number): { env: Map<string, string>; argv: string[] } {
  const env = new Map<string, string>();
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return { env, argv: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0') };
}

/** The pids of a process' children (the workers of a primary). */
function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

test('portico runs with a fixed malloc mmap threshold and the young generation cap, workers too', async () => {
  const env = { ...process.env };
  for (const name of ['MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'MALLOC_TOP_PAD_', 'MALLOC_MMAP_MAX_']) delete env[name];
  const portico = await startPortico(['--manifests', dir, '--workers', '2'], env);
  started.push(portico);
  const primary = processOf(portico.child.pid!);
  assert.equal(primary.env.get('MALLOC_MMAP_THRESHOLD_'), '131072');
  for (const flag of NODE_FLAGS) assert.ok(primary.argv.includes(flag), `${flag} in ${primary.argv.join(' ')}`);
  const workers = childrenOf(portico.child.pid!);
  assert.equal(workers.length, 2);
  for (const pid of workers) assert.equal(processOf(pid).env.get('MALLOC_MMAP_THRESHOLD_'), '131072');
});

test("a malloc threshold the user set is kept", async () => {
  const portico = await startPortico(['--manifests', dir], { MALLOC_TRIM_THRESHOLD_: '262144' });
  started.push(portico);
  const { env } = processOf(portico.child.pid!);
  assert.equal(env.get('MALLOC_TRIM_THRESHOLD_'), '262144');
  assert.equal(env.get('MALLOC_MMAP_THRESHOLD_'), undefined);
});

test('the compilers start off, stay off while idle, and come on with the first work: a client, a change', async () => {
  const manifests = mkdtempSync(join(tmpdir(), 'portico-compilers-'));
  const write = (host: string) =>
    writeFileSync(join(manifests, 'ingress.yaml'), `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: web, namespace: default }
spec:
  rules:
    - host: ${host}
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
`);
  write('a.test');
  const portico = await startPortico(['--manifests', manifests, '--workers', '2', '--log-level', 'debug']);
  started.push(portico);
  try {
    const workers = childrenOf(portico.child.pid!);
    assert.equal(workers.length, 2);
    const turnedOn = () => portico.logs.filter((l) => l.msg === 'optimizing compilers on');
    // Idle: nothing comes on, but for a process whose start-up ran past its budget (1 s; a loaded machine).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const byBudget = turnedOn().filter((l) => String(l.why).startsWith('start-up took'));
    assert.deepEqual(turnedOn(), byBudget, 'no work yet');
    // A client: the worker that accepts it turns them on.
    const response = await fetch(`http://127.0.0.1:${portico.http}/`, { headers: { host: 'a.test' } });
    await response.arrayBuffer();
    if (byBudget.length === 0) await portico.waitForLog((l) => l.msg === 'optimizing compilers on' && l.why === 'a client connected');
    // A change: the primary (an object changed) and both workers (a routing change, or already on).
    write('b.test');
    await portico.waitForLog((l) => l.msg === 'optimizing compilers on' && l.pid === portico.child.pid);
    for (const pid of workers) {
      await eventually(async () => turnedOn().some((l) => l.pid === pid), 10_000, `worker ${pid} turns the compilers on`);
    }
    // Once per process.
    assert.equal(new Set(turnedOn().map((l) => l.pid)).size, turnedOn().length);
  } finally {
    rmSync(manifests, { recursive: true, force: true });
  }
});

for (const own of ['--max-opt=2', '--no_maglev']) {
  test(`an operator flag naming a compiler (${own}) keeps the compilers as the operator set them`, async () => {
    const portico = await startPortico(['--manifests', dir, '--log-level', 'debug'], {}, 40_000, [own]);
    started.push(portico);
    assert.ok(processOf(portico.child.pid!).argv.includes(own));
    // A client: work that would turn deferred compilers on.
    await (await fetch(`http://127.0.0.1:${portico.http}/`)).arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    assert.equal(portico.logs.filter((l) => l.msg === 'optimizing compilers on').length, 0);
  });
}
