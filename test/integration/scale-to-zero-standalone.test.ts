// Black-box: scale-to-zero in standalone mode, through the real CLI. A Service with
// portico.dev/scale-to-zero and no ready endpoints holds its requests (bodies kept)
// until endpoints appear in the manifests, or answers 503 + Retry-After at its wake
// timeout or past max-held-requests. Nothing is scaled in this mode: the same code
// path as in a cluster, minus the API calls (see scale-to-zero-cluster.test.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, type Obj } from '../support/objects.ts';
import { get, send, type Reply } from '../support/http.ts';
import { freePort } from '../support/ports.ts';

type Echo = Awaited<ReturnType<typeof startEchoServer>>;

function sleepyService(name: string, annotations: Record<string, string> = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', annotations: { 'portico.dev/scale-to-zero': 'true', ...annotations } },
    spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  };
}

function slice(service: string, port: number): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${service}-pods`, namespace: 'default', labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port, protocol: 'TCP' }],
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
  };
}

interface SleepView {
  service: string;
  state: string;
  held: number;
}

describe('scale-to-zero, standalone', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  const echoes: Echo[] = [];

  const sleepView = async (service: string): Promise<SleepView | undefined> =>
    ((await get(portico.admin, 'x', '/routes')).json().scaleToZero as SleepView[]).find((s) => s.service === service);

  before(async () => {
    dir.write('class.yaml', [ingressClass('portico')]);
    const apps = ['wake', 'boot', 'many', 'timeout', 'full'];
    dir.write('ingress.yaml', [
      ingress('apps', { rules: apps.map((a) => ({ host: `${a}.test`, paths: [{ path: '/', service: a }] })) }),
      ingress('bad', { rules: [{ host: 'bad.test', paths: [{ path: '/', service: 'bad' }] }] }),
    ]);
    dir.write('services.yaml', [
      sleepyService('wake', { 'portico.dev/wake-timeout': '30s' }),
      sleepyService('boot', { 'portico.dev/wake-timeout': '30s' }),
      sleepyService('many', { 'portico.dev/wake-timeout': '30s' }),
      sleepyService('timeout', { 'portico.dev/wake-timeout': '1s' }),
      sleepyService('full', { 'portico.dev/wake-timeout': '20s', 'portico.dev/max-held-requests': '2' }),
      sleepyService('bad', { 'portico.dev/sleep-after': 'soon', 'portico.dev/scale-target': 'pod/x' }),
    ]);
    portico = await startPortico(['--manifests', dir.path, '--debounce', '0']);
  });

  after(async () => {
    await portico?.stop();
    await Promise.all(echoes.map((e) => e.close()));
    dir.cleanup();
  });

  test('a request for a Service without endpoints is held, body and all, and forwarded once an endpoint appears', async () => {
    const body = randomBytes(64 * 1024);
    const pending = send(portico.http, { method: 'POST', host: 'wake.test', path: '/upload?x=1', body, headers: { 'content-type': 'application/octet-stream' }, timeoutMs: 20_000 });
    await eventually(async () => (await sleepView('default/wake'))?.held === 1, 5000, 'the request held');
    assert.equal((await sleepView('default/wake'))?.state, 'waking');

    const echo = await startEchoServer({ name: 'wake' });
    echoes.push(echo);
    const counter = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    const before = (await get(portico.admin, 'x', '/metrics')).text;
    dir.write('wake-pods.yaml', [slice('wake', echo.port)]);
    const reply = await pending;
    // The endpoint released it: the backend's addresses moved in the live routes, no table was built.
    const after = (await get(portico.admin, 'x', '/metrics')).text;
    assert.equal(counter(after, 'portico_endpoint_updates_total'), counter(before, 'portico_endpoint_updates_total') + 1);
    assert.equal(counter(after, 'portico_route_table_version'), counter(before, 'portico_route_table_version'));
    assert.equal(reply.status, 200, reply.text);
    const echoed = reply.json<{ method: string; path: string; query: string; bodyLength: number; bodySha256: string }>();
    assert.equal(echoed.method, 'POST');
    assert.equal(echoed.path, '/upload');
    assert.equal(echoed.query, 'x=1');
    assert.equal(echoed.bodyLength, body.length);
    assert.equal(echoed.bodySha256, createHash('sha256').update(body).digest('hex'));

    await eventually(async () => (await sleepView('default/wake'))?.state === 'awake', 5000, 'the Service shown awake');
    const metrics = (await get(portico.admin, 'x', '/metrics')).text;
    assert.match(metrics, /portico_scale_to_zero_wakes_total\{service="default\/wake"\} 1/);
    assert.match(metrics, /portico_scale_to_zero_wake_duration_seconds_count 1/);
  });

  test('while the pod boots its refused connections are retried until it listens: no 502', async () => {
    const port = await freePort();
    const pending = get(portico.http, 'boot.test', '/ready', { timeoutMs: 20_000 });
    await eventually(async () => (await sleepView('default/boot'))?.held === 1, 5000, 'the request held');
    // The endpoint is published ready before the process listens, as a pod whose readiness lies.
    dir.write('boot-pods.yaml', [slice('boot', port)]);
    await new Promise((r) => setTimeout(r, 600));
    const echo = await startEchoServer({ name: 'boot', port });
    echoes.push(echo);
    const reply = await pending;
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.json().path, '/ready');
  });

  test('200 concurrent held requests, GET and POST, all reach the pod once it is there', async () => {
    const requests: Promise<Reply>[] = [];
    for (let i = 0; i < 200; i++) {
      requests.push(
        i % 2 === 0
          ? get(portico.http, 'many.test', `/get/${i}`, { timeoutMs: 20_000 })
          : send(portico.http, { method: 'POST', host: 'many.test', path: `/post/${i}`, body: `body ${i}`, timeoutMs: 20_000 }),
      );
    }
    await eventually(async () => (await sleepView('default/many'))?.held === 200, 10_000, 'all 200 held');
    const echo = await startEchoServer({ name: 'many' });
    echoes.push(echo);
    dir.write('many-pods.yaml', [slice('many', echo.port)]);
    const replies = await Promise.all(requests);
    replies.forEach((reply, i) => {
      assert.equal(reply.status, 200, `request ${i}: ${reply.text}`);
      const echoed = reply.json<{ path: string; bodyLength: number }>();
      assert.equal(echoed.path, i % 2 === 0 ? `/get/${i}` : `/post/${i}`);
      assert.equal(echoed.bodyLength, i % 2 === 0 ? 0 : `body ${i}`.length);
    });
  });

  test('a held request gets 503 with Retry-After at the wake timeout', async () => {
    const reply = await get(portico.http, 'timeout.test', '/', { timeoutMs: 10_000 });
    assert.equal(reply.status, 503);
    assert.ok(Number(reply.headers['retry-after']) > 0, 'Retry-After');
    const metrics = (await get(portico.admin, 'x', '/metrics')).text;
    assert.match(metrics, /portico_scale_to_zero_wake_timeouts_total\{service="default\/timeout"\} 1/);
    await portico.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('default/timeout') && l.msg.includes('wake-timeout'));
  });

  test('past max-held-requests a request gets 503 with Retry-After at once; the held ones still wait', async () => {
    const held = [get(portico.http, 'full.test', '/1', { timeoutMs: 30_000 }), get(portico.http, 'full.test', '/2', { timeoutMs: 30_000 })];
    await eventually(async () => (await sleepView('default/full'))?.held === 2, 5000, 'two held');
    const started = Date.now();
    const refused = await get(portico.http, 'full.test', '/3');
    assert.equal(refused.status, 503);
    assert.ok(Number(refused.headers['retry-after']) > 0, 'Retry-After');
    assert.ok(Date.now() - started < 10_000, 'answered at once, not held until the 20 s wake-timeout');
    const echo = await startEchoServer({ name: 'full' });
    echoes.push(echo);
    dir.write('full-pods.yaml', [slice('full', echo.port)]);
    for (const reply of await Promise.all(held)) assert.equal(reply.status, 200);
  });

  test('bad annotations: one warning each, and the Service behaves as one without scale-to-zero', async () => {
    const routes = (await get(portico.admin, 'x', '/routes')).json();
    const problems = (routes.problems as { object: { kind: string; name: string }; reason: string; message: string }[]).filter(
      (p) => p.object.kind === 'Service' && p.object.name === 'bad',
    );
    assert.equal(problems.length, 2, JSON.stringify(problems));
    assert.ok(problems.every((p) => p.reason === 'InvalidAnnotation'));
    assert.ok(problems.some((p) => p.message.includes('portico.dev/sleep-after') && p.message.includes('"soon"')));
    assert.ok(problems.some((p) => p.message.includes('portico.dev/scale-target') && p.message.includes('"pod/x"')));
    assert.equal((routes.scaleToZero as SleepView[]).some((s) => s.service === 'default/bad'), false);
    const started = Date.now();
    const reply = await get(portico.http, 'bad.test', '/');
    assert.equal(reply.status, 503, 'no endpoints: 503 at once, not held');
    assert.ok(Date.now() - started < 10_000, 'not held until a wake-timeout (default 2 min)');
    await portico.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('Service default/bad') && l.msg.includes('sleep-after'));
  });
});

describe('scale-to-zero, standalone, with 2 workers', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  const echoes: Echo[] = [];

  before(async () => {
    dir.write('class.yaml', [ingressClass('portico')]);
    dir.write('ingress.yaml', [ingress('apps', { rules: [{ host: 'w.test', paths: [{ path: '/', service: 'w' }] }] })]);
    dir.write('services.yaml', [sleepyService('w', { 'portico.dev/wake-timeout': '30s' })]);
    portico = await startPortico(['--manifests', dir.path, '--debounce', '0', '--workers', '2']);
  });

  after(async () => {
    await portico?.stop();
    await Promise.all(echoes.map((e) => e.close()));
    dir.cleanup();
  });

  test('held requests on every worker are released, and the primary shows the activity and state the workers report', async () => {
    // Separate connections: the kernel spreads them over both workers.
    const pending = Array.from({ length: 8 }, (_, i) => get(portico.http, 'w.test', `/r${i}`, { timeoutMs: 20_000 }));
    await portico.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('Service default/w has no ready endpoints'));
    const view = async () => ((await get(portico.admin, 'x', '/routes')).json().scaleToZero as { service: string; state: string; held: number }[])[0];
    await eventually(async () => (await view())?.held === 8, 5000, 'the workers report 8 held requests');
    assert.equal((await view())?.state, 'waking');
    const echo = await startEchoServer({ name: 'w' });
    echoes.push(echo);
    dir.write('pods.yaml', [slice('w', echo.port)]);
    for (const reply of await Promise.all(pending)) assert.equal(reply.status, 200);
    await eventually(async () => (await view())?.state === 'awake', 5000, 'awake');
    const metrics = (await get(portico.admin, 'x', '/metrics')).text;
    assert.match(metrics, /portico_scale_to_zero_wakes_total\{service="default\/w"\} 1/);
    assert.match(metrics, /portico_scale_to_zero_held_requests\{service="default\/w"\} 0/);
  });
});
