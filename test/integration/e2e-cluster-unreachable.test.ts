// Cluster mode with an API server that cannot be reached: one warning per outage, not
// one per watched kind per retry. It names the server and the cause (not undici's bare
// "fetch failed"), the kinds affected, and what is served meanwhile; it does not claim
// a last known state portico never had. When the API comes back, one line says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort } from '../support/ports.ts';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico } from '../support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get } from '../support/http.ts';

type Line = Record<string, unknown>;
const isWarn = (l: Line) => l.level === 'warn' || l.level === 'error';
const text = (l: Line) => String(l.msg);
const KINDS = ['IngressClass', 'Ingress', 'Service', 'EndpointSlice', 'Secret', 'leader election'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('an API server unreachable from the start: one warning naming the server, the cause and every kind', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-unreachable-'));
  const port = await closedPort();
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`,
  );
  // Never ready (nothing is listed): read its log without waiting for "portico ready".
  const { spawn } = await import('node:child_process');
  const { createInterface } = await import('node:readline');
  const { fileURLToPath } = await import('node:url');
  const bin = fileURLToPath(new URL('../../bin/portico.js', import.meta.url));
  const child = spawn(process.execPath, [bin, '--kubeconfig', kubeconfig, '--workers', '1', '--http-port', '0', '--https-port', '0', '--admin-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Line[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.push(JSON.parse(l) as Line));
  try {
    await eventually(async () => lines.some(isWarn), 40_000, 'a warning');
    // Retries run every 200 ms or so at first: give them time to be (not) logged.
    await sleep(3000);
    const warnings = lines.filter(isWarn).map(text);
    assert.equal(warnings.length, 1, warnings.join('\n'));
    const msg = warnings[0]!;
    assert.ok(msg.startsWith(`cannot use the Kubernetes API https://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port} (`), msg);
    for (const kind of KINDS) assert.ok(msg.includes(kind), `${kind} in ${msg}`);
    assert.match(msg, /nothing is served until the first list succeeds; retrying, with a reminder every 1 min until it works$/);
    assert.doesNotMatch(msg, /last known/);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an outage after the first sync: one warning when it starts, none while it lasts, one line when it ends; routes keep serving', async () => {
  const api = await FakeKubeApiServer.start({ token: 't', tls: true });
  const dir = mkdtempSync(join(tmpdir(), 'portico-outage-'));
  const web = await startEchoServer({ name: 'web' });
  let portico: Awaited<ReturnType<typeof startPortico>> | undefined;
  try {
    const port = web.port;
    for (const o of [
      ingressClass('portico'),
      ...serviceWithEndpoints('web', [port]),
      ingress('web', { rules: [{ host: 'web.cluster', paths: [{ path: '/', service: 'web' }] }] }),
    ]) {
      api.apply(o as never);
    }
    portico = await startPortico(['--kubeconfig', api.writeKubeconfig(dir), '--publish-address', '198.51.100.10']);
    const p = portico;
    await eventually(async () => (await get(p.http, 'web.cluster', '/')).status === 200, 10_000, 'served before the outage');
    const before = p.logs.length;
    const server = api.url;

    await api.goDown();
    const start = await p.waitForLog((l) => isWarn(l) && text(l).startsWith(`cannot use the Kubernetes API ${server}`), 10_000);
    assert.match(text(start), /connect ECONNREFUSED/);
    for (const kind of ['IngressClass', 'Ingress', 'Service', 'EndpointSlice', 'Secret']) assert.ok(text(start).includes(kind), `${kind} in ${text(start)}`);
    assert.match(text(start), /; serving the last known routes; retrying/);
    await sleep(3000);
    assert.equal((await get(p.http, 'web.cluster', '/')).status, 200, 'still served from the last known state');
    const during = p.logs.slice(before).filter(isWarn).map(text);
    assert.deepEqual(during, [text(start)], 'one warning for the whole outage so far');

    await api.comeUp();
    const back = await p.waitForLog((l) => text(l).startsWith(`Kubernetes API ${server} works again after `), 40_000);
    assert.equal(back.level, 'info');
    if (process.env.SHOW_LINES) console.log(p.logs.slice(before).map((l) => `${String(l.level)} ${text(l)}`).join('\n'));
    for (const kind of ['IngressClass', 'Ingress', 'Service', 'EndpointSlice', 'Secret']) assert.ok(text(back).includes(kind), `${kind} in ${text(back)}`);
    assert.deepEqual(p.logs.slice(before).filter(isWarn).map(text), [text(start)], 'and none after it ended');
  } finally {
    await portico?.stop();
    await web.close();
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
