import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdminServer } from '../../src/admin/server.ts';
import { createMetrics } from '../../src/admin/metrics.ts';
import { Registry } from 'prom-client';
import { buildRouteTable, emptyRoutingConfig, RouteTableHolder } from '../../src/routing/table.ts';
import { compileForTest, largeConfig, sampleConfig, sampleProblem, scanMatcher } from '../unit/admin/fixtures.ts';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function request(port: number, path: string, method = 'GET'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Parses Prometheus text exposition: every line is a comment, blank, or "series value". */
function parsePrometheus(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) {
      if (line.startsWith('#')) assert.match(line, /^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* /, line);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?) (\S+)$/.exec(line);
    assert.ok(m, `not a Prometheus sample line: ${line}`);
    const value = Number(m[2]);
    assert.ok(!Number.isNaN(value) || m[2] === 'NaN', `bad value in: ${line}`);
    samples.set(m[1]!, value);
  }
  return samples;
}

describe('admin server', () => {
  const metrics = createMetrics();
  const holder = new RouteTableHolder(buildRouteTable(0, emptyRoutingConfig(), compileForTest, scanMatcher));
  let alive = true;
  const server = createAdminServer({ holder, registry: metrics.registry, isAlive: () => alive });
  let port = 0;

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test('/healthz answers ok while alive', async () => {
    const reply = await request(port, '/healthz');
    assert.equal(reply.status, 200);
    assert.equal(reply.body.trim(), 'ok');
    alive = false;
    try {
      assert.equal((await request(port, '/healthz')).status, 503);
    } finally {
      alive = true;
    }
  });

  test('/readyz is 503 until the first table is swapped in, then 200', async () => {
    const before = await request(port, '/readyz');
    assert.equal(before.status, 503);
    assert.equal(before.body.trim(), 'not ready: waiting for the first route table');

    const table = buildRouteTable(1, sampleConfig(), compileForTest, scanMatcher);
    holder.swap(table);
    metrics.recordRebuild(table, 2, table.config.problems);
    const after = await request(port, '/readyz');
    assert.equal(after.status, 200);
    assert.equal(after.body.trim(), 'ready');
  });

  test('/metrics serves Prometheus text with the controller metrics', async () => {
    const reply = await request(port, '/metrics');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], metrics.registry.contentType);
    const samples = parsePrometheus(reply.body);
    assert.equal(samples.get('portico_route_table_routes'), 6);
    assert.equal(samples.get('portico_route_table_hosts'), 3);
    assert.equal(samples.get('portico_route_table_version'), 1);
    assert.equal(samples.get('portico_ready'), 1);
    assert.equal(samples.get('portico_config_problems{kind="Ingress",reason="ServiceNotFound",severity="warning"}'), 1);
    assert.equal(samples.get('portico_kubernetes_api_connected'), 0);
    assert.ok(samples.has('portico_route_table_rebuild_seconds_bucket{le="+Inf"}'));
    assert.ok(samples.has('portico_route_table_last_rebuild_timestamp_seconds'));
    assert.ok(samples.has('process_resident_memory_bytes'));
  });

  test('/routes serves the live table as JSON', async () => {
    holder.swap(buildRouteTable(2, sampleConfig(), compileForTest, scanMatcher));
    const reply = await request(port, '/routes');
    assert.equal(reply.status, 200);
    assert.match(String(reply.headers['content-type']), /^application\/json/);
    const doc = JSON.parse(reply.body);
    assert.equal(doc.version, 2);
    assert.equal(doc.routes, 6);
    assert.deepEqual(Object.keys(doc.hosts).sort(), ['*', '*.example.com', 'shop.example.com']);
    assert.deepEqual(doc.hosts['shop.example.com']['/api'], {
      pathType: 'Prefix',
      ingress: 'shop/web',
      backend: { service: 'shop/api', port: 'http', endpoints: ['[fd00::5]:9000'], state: 'ok' },
      policies: ['rate-limit', 'cors'],
    });
    assert.equal(doc.hosts['shop.example.com']['/old'].backend.state, 'ServiceNotFound');
    assert.equal(doc.hosts['*']['/status'].pathType, 'Exact');
    assert.equal(doc.defaultBackend.ingress, 'default/catch-all');
    assert.deepEqual(doc.certificates, { 'shop.example.com': 'shop/shop-tls', '*.example.com': 'shop/wild-tls' });
    assert.deepEqual(doc.problems, [sampleProblem]);
  });

  test('/routes follows a swap', async () => {
    holder.swap(buildRouteTable(3, emptyRoutingConfig(), compileForTest, scanMatcher));
    const doc = JSON.parse((await request(port, '/routes')).body);
    assert.equal(doc.version, 3);
    assert.equal(doc.routes, 0);
    assert.deepEqual(doc.hosts, {});
    assert.equal(doc.defaultBackend, null);
  });

  test('/routes handles a 30,000-route table', async () => {
    holder.swap(buildRouteTable(4, largeConfig(30_000), compileForTest, scanMatcher));
    const first = await request(port, '/routes');
    const second = await request(port, '/routes');
    assert.equal(first.body, second.body);
    const doc = JSON.parse(first.body);
    assert.equal(doc.routes, 30_000);
    assert.equal(Object.keys(doc.hosts).length, 3_000);
    assert.deepEqual(Object.keys(doc.hosts['host-2999.bulk.example.com']).sort(), ['/p0', '/p1', '/p2', '/p3', '/p4', '/p5', '/p6', '/p7', '/p8', '/p9']);
  });

  test('a query string does not change the endpoint', async () => {
    assert.equal((await request(port, '/healthz?verbose=1')).status, 200);
  });

  test('HEAD gets the headers without a body', async () => {
    const reply = await request(port, '/healthz', 'HEAD');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-length'], '3');
    assert.equal(reply.body, '');
  });

  test('unknown paths are 404 and other methods 405', async () => {
    const missing = await request(port, '/nope');
    assert.equal(missing.status, 404);
    assert.match(missing.body, /\/routes/);
    const post = await request(port, '/routes', 'POST');
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });
});

describe('admin: /routes is for loopback and --admin-routes-allow only', () => {
  /** Calls the admin request handler as if the request came from `peer`. */
  function ask(server: import('node:http').Server, path: string, peer: string): Promise<number> {
    const handler = server.listeners('request')[0] as (req: unknown, res: unknown) => void;
    return new Promise((resolve) => {
      const res = { writeHead: (status: number) => resolve(status), end: () => {} };
      handler({ method: 'GET', url: path, headers: {}, socket: { remoteAddress: peer } }, res);
    });
  }

  test('a pod-network peer gets the probes and /metrics, not /routes; loopback and allowed CIDRs get /routes', async () => {
    const holder = new RouteTableHolder(buildRouteTable(1, emptyRoutingConfig(), (config) => ({ config, handle: () => {} })));
    holder.ready = true;
    const server = createAdminServer({ holder, registry: new Registry(), routesAllowed: (ip) => ip.startsWith('10.9.') });
    assert.equal(await ask(server, '/healthz', '10.1.2.3'), 200);
    assert.equal(await ask(server, '/readyz', '10.1.2.3'), 200);
    assert.equal(await ask(server, '/metrics', '10.1.2.3'), 200);
    assert.equal(await ask(server, '/routes', '10.1.2.3'), 403);
    assert.equal(await ask(server, '/routes', '::ffff:10.1.2.3'), 403);
    assert.equal(await ask(server, '/routes', '127.0.0.1'), 200);
    assert.equal(await ask(server, '/routes', '::1'), 200);
    assert.equal(await ask(server, '/routes', '10.9.0.7'), 200);
    assert.equal(await ask(server, '/routes', '::ffff:10.9.0.7'), 200);
  });
});
