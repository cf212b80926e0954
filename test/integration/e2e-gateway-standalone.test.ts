// Black-box: Gateway API in standalone mode, through the real CLI, against echo pods
// on loopback: listeners bound from Gateways, HTTPRoute matching and precedence,
// filters, weights, invalid references, live listener changes, and the status shown
// in /routes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import selfsigned from 'selfsigned';
import { startEchoServer, type EchoReply } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints, tlsSecret, type Obj } from '../support/objects.ts';
import { freePort, gateway, gatewayClass, httpRoute } from '../support/gateway-objects.ts';
import { get, send } from '../support/http.ts';

type Echo = Awaited<ReturnType<typeof startEchoServer>>;

describe('Gateway API in standalone mode, black box', () => {
  const dir = new ManifestDir();
  const echoes: Echo[] = [];
  let portico: PorticoProcess;
  let httpPort: number;
  let httpsPort: number;
  let cert: { cert: string; private: string };
  let mirrorServer: http.Server;
  const mirrored: { path: string; host: string }[] = [];

  async function service(name: string, namespace = 'default'): Promise<Obj[]> {
    const echo = await startEchoServer({ name, namespace });
    echoes.push(echo);
    return serviceWithEndpoints(name, [echo.port], { namespace });
  }

  const routes = async (): Promise<Record<string, any>> => (await get(portico.admin, 'localhost', '/routes')).json();

  before(async () => {
    httpPort = await freePort();
    httpsPort = await freePort();
    cert = await selfsigned.generate([{ name: 'commonName', value: 'secure.example.com' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'secure.example.com' }] }],
    });
    dir.write('gateway.yaml', [
      gatewayClass(),
      gateway('gw', [
        { name: 'http', port: httpPort, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'Same' } } },
        { name: 'https', port: httpsPort, protocol: 'HTTPS', hostname: 'secure.example.com', tls: { certificateRefs: [{ name: 'secure-cert' }] } },
      ]),
      tlsSecret('secure-cert', cert.cert, cert.private),
    ]);
    // The mirror records what reaches it (its answers are thrown away by portico).
    mirrorServer = http.createServer((req, res) => {
      mirrored.push({ path: req.url ?? '', host: req.headers.host ?? '' });
      res.end('mirror');
    });
    await new Promise<void>((resolve) => mirrorServer.listen(0, '127.0.0.1', resolve));
    const mirrorPort = (mirrorServer.address() as AddressInfo).port;
    dir.write('services.yaml', [...(await service('v1')), ...(await service('v2')), ...serviceWithEndpoints('mirror', [mirrorPort]), ...(await service('other', 'elsewhere'))]);
    dir.write('routes.yaml', [
      httpRoute('app', {
        parentRefs: [{ name: 'gw', sectionName: 'http' }],
        hostnames: ['app.example.com'],
        rules: [
          { matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: 'v1', port: 80 }] },
          { matches: [{ path: { type: 'PathPrefix', value: '/' }, headers: [{ name: 'version', value: 'two' }] }], backendRefs: [{ name: 'v2', port: 80 }] },
          { matches: [{ path: { type: 'Exact', value: '/exact' }, method: 'POST' }], backendRefs: [{ name: 'v2', port: 80 }] },
          { matches: [{ path: { type: 'PathPrefix', value: '/search' }, queryParams: [{ name: 'engine', value: 'two' }] }], backendRefs: [{ name: 'v2', port: 80 }] },
        ],
      }),
      httpRoute('filters', {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['filters.example.com'],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/old' } }],
            filters: [
              { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X-Set', value: 'set' }], add: [{ name: 'X-Add', value: 'added' }], remove: ['X-Remove'] } },
              { type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'X-Response', value: 'yes' }], remove: ['X-Pod'] } },
              { type: 'URLRewrite', urlRewrite: { hostname: 'rewritten.internal', path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/new' } } },
              { type: 'RequestMirror', requestMirror: { backendRef: { name: 'mirror', port: 80 } } },
            ],
            backendRefs: [{ name: 'v1', port: 80 }],
          },
          {
            matches: [{ path: { type: 'PathPrefix', value: '/moved' } }],
            filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', hostname: 'new.example.com', statusCode: 301, path: { type: 'ReplaceFullPath', replaceFullPath: '/landing' } } }],
          },
        ],
      }),
      {
        ...httpRoute('policies', {
          parentRefs: [{ name: 'gw' }],
          hostnames: ['policies.example.com'],
          rules: [{ backendRefs: [{ name: 'v1', port: 80 }] }],
        }),
        metadata: { name: 'policies', namespace: 'default', annotations: { 'portico.dev/response-headers': 'X-Policy: on', 'portico.dev/ip-deny': '127.0.0.0/8' } },
      },
      httpRoute('split', {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['split.example.com'],
        rules: [{ backendRefs: [{ name: 'v1', port: 80, weight: 50 }, { name: 'v2', port: 80, weight: 50 }, { name: 'mirror', port: 80, weight: 0 }] }],
      }),
      httpRoute('broken', {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['broken.example.com'],
        rules: [
          { matches: [{ path: { type: 'PathPrefix', value: '/missing' } }], backendRefs: [{ name: 'nothing', port: 80 }] },
          { matches: [{ path: { type: 'PathPrefix', value: '/cross' } }], backendRefs: [{ name: 'other', namespace: 'elsewhere', port: 80 }] },
        ],
      }),
      httpRoute('secure', { parentRefs: [{ name: 'gw', sectionName: 'https' }], rules: [{ backendRefs: [{ name: 'v2', port: 80 }] }] }),
      httpRoute('intruder', { parentRefs: [{ name: 'gw', namespace: 'default' }], hostnames: ['intruder.example.com'], rules: [{ backendRefs: [{ name: 'other', port: 80 }] }] }, 'elsewhere'),
    ]);
    // Ingress keeps its own listeners beside the Gateway's.
    dir.write('ingress.yaml', [ingressClass('portico'), ingress('classic', { rules: [{ host: 'app.example.com', paths: [{ path: '/', service: 'v1' }] }] })]);
    portico = await startPortico(['--manifests', dir.path]);
    await eventually(async () => (await get(httpPort, 'app.example.com', '/').catch(() => ({ status: 0 }))).status === 200, 5000, 'the Gateway listener serves');
  });

  after(async () => {
    assert.equal(await portico?.stop(), 0, 'exits 0 on SIGTERM');
    await new Promise((r) => mirrorServer?.close(r));
    for (const e of echoes) await e.close();
    dir.cleanup();
  });

  const service_ = async (port: number, host: string, path: string, extra = {}) => (await get(port, host, path, extra)).json<EchoReply>().service;

  test('HTTPRoute matches: path, then header, method and query conditions, by precedence', async () => {
    assert.equal(await service_(httpPort, 'app.example.com', '/anything'), 'v1');
    assert.equal(await service_(httpPort, 'app.example.com', '/anything', { headers: { version: 'two' } }), 'v2');
    assert.equal((await send(httpPort, { method: 'POST', host: 'app.example.com', path: '/exact' })).json<EchoReply>().service, 'v2');
    assert.equal(await service_(httpPort, 'app.example.com', '/exact'), 'v1');
    assert.equal(await service_(httpPort, 'app.example.com', '/search?engine=two'), 'v2');
    assert.equal(await service_(httpPort, 'app.example.com', '/search?engine=one'), 'v1');
    assert.equal((await get(httpPort, 'unknown.example.com', '/')).status, 404);
    // The Ingress listener is separate: the same host there is served by the Ingress.
    assert.equal(await service_(portico.http, 'app.example.com', '/anything', { headers: { version: 'two' } }), 'v1');
  });

  test('filters: request and response headers, URL rewrite, mirror, redirect', async () => {
    const reply = await get(httpPort, 'filters.example.com', '/old/page?q=1', { headers: { 'X-Remove': 'bye', 'X-Add': 'client' } });
    const echo = reply.json<EchoReply>();
    assert.equal(echo.path, '/new/page');
    assert.equal(echo.query, 'q=1');
    assert.equal(echo.host, 'rewritten.internal');
    assert.equal(echo.headers['x-set'], 'set');
    assert.equal(echo.headers['x-add'], 'client, added');
    assert.equal(echo.headers['x-remove'], undefined);
    assert.equal(reply.headers['x-response'], 'yes');
    assert.equal(reply.headers['x-pod'], undefined);
    // The mirror got a copy of the request, as the pod got it (after the rewrite).
    await eventually(async () => mirrored.some((m) => m.path === '/new/page?q=1'), 5000, 'the mirror got the request');
    const redirect = await get(httpPort, 'filters.example.com', '/moved/x?y=1');
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.location, 'https://new.example.com/landing?y=1');
  });

  test('portico.dev/* annotations on an HTTPRoute act on its rules', async () => {
    assert.equal((await get(httpPort, 'policies.example.com', '/')).status, 403);
    const view = await routes();
    const policies = view.gatewayApi.routes.find((r: any) => r.httpRoute === 'default/policies').policies;
    assert.ok(policies.includes('ip-deny') && policies.includes('headers'), JSON.stringify(policies));
  });

  test('weights split traffic; weight 0 gets none', async () => {
    const seen = new Map<string, number>();
    for (let i = 0; i < 60; i++) {
      const s = await service_(httpPort, 'split.example.com', '/');
      seen.set(s, (seen.get(s) ?? 0) + 1);
    }
    assert.deepEqual([...seen.keys()].sort(), ['v1', 'v2']);
    assert.ok(seen.get('v1')! >= 10 && seen.get('v2')! >= 10, `both halves get traffic: ${JSON.stringify([...seen])}`);
  });

  test('backendRefs that do not resolve answer 500; routes from a namespace the listener does not allow are not served', async () => {
    assert.equal((await get(httpPort, 'broken.example.com', '/missing')).status, 500);
    assert.equal((await get(httpPort, 'broken.example.com', '/cross')).status, 500);
    assert.equal((await get(httpPort, 'intruder.example.com', '/')).status, 404);
    const view = await routes();
    const parents = (key: string) => view.gatewayApi.httpRoutes[key].parents[0].conditions.map((c: any) => `${c.type}=${c.status}:${c.reason}`);
    assert.deepEqual(parents('default/broken'), ['Accepted=True:Accepted', 'ResolvedRefs=False:BackendNotFound']);
    assert.deepEqual(parents('elsewhere/intruder'), ['Accepted=False:NotAllowedByListeners', 'ResolvedRefs=True:ResolvedRefs']);
    assert.deepEqual(parents('default/app'), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
    const listeners = view.gatewayApi.gateways['default/gw'].listeners;
    assert.deepEqual(listeners.map((l: any) => [l.name, l.attachedRoutes]), [['http', 5], ['https', 1]]);
  });

  test('an HTTPS listener terminates TLS with its certificate', async () => {
    const reply = await get(httpsPort, 'secure.example.com', '/', { https: { servername: 'secure.example.com', ca: cert.cert } });
    assert.equal(reply.json<EchoReply>().service, 'v2');
  });

  test('a new or changed HTTPRoute is the only route translated (portico_gateway_routes_translated_total)', async () => {
    const metricsText = async () => (await get(portico.admin, 'localhost', '/metrics')).text;
    const translated = async () => Number(/^portico_gateway_routes_translated_total (\d+)/m.exec(await metricsText())?.[1] ?? NaN);
    const before = await translated();
    assert.ok(before >= 1, 'the routes of the first translation are counted');
    const route = (service: string) => httpRoute('one-more', { parentRefs: [{ name: 'gw', sectionName: 'http' }], hostnames: ['one-more.example.com'], rules: [{ backendRefs: [{ name: service, port: 80 }] }] });
    dir.write('one-more.yaml', [route('v1')]);
    await eventually(async () => (await get(httpPort, 'one-more.example.com', '/')).status === 200, 5000, 'the new route serves');
    assert.equal(await service_(httpPort, 'one-more.example.com', '/'), 'v1');
    assert.equal(await translated(), before + 1, 'only the new route translated');
    dir.write('one-more.yaml', [route('v2')]);
    await eventually(async () => (await service_(httpPort, 'one-more.example.com', '/')) === 'v2', 5000, 'the changed route serves');
    assert.equal(await translated(), before + 2, 'only the changed route translated');
    assert.ok(portico.logs.some((l) => l.msg === 'route table updated' && l.gatewayRoutesTranslated === 1), 'the table update says how many routes it translated');
    dir.remove('one-more.yaml');
    await eventually(async () => (await get(httpPort, 'one-more.example.com', '/')).status === 404, 5000, 'the removed route is gone');
  });

  test('listeners follow the Gateways live: a new port is bound, a removed one closed, others keep serving', async () => {
    const extra = await freePort();
    dir.write('extra.yaml', [
      gateway('extra', [{ name: 'more', port: extra, protocol: 'HTTP' }]),
      httpRoute('extra', { parentRefs: [{ name: 'extra' }], rules: [{ backendRefs: [{ name: 'v2', port: 80 }] }] }),
      // A port the Ingress listener holds is a listener condition, not a crash.
      gateway('clash', [{ name: 'taken', port: portico.http, protocol: 'HTTP' }]),
    ]);
    await eventually(async () => (await get(extra, 'any.example.com', '/').catch(() => ({ status: 0 }))).status === 200, 5000, 'the new port serves');
    assert.equal(await service_(extra, 'any.example.com', '/'), 'v2');
    assert.equal(await service_(httpPort, 'app.example.com', '/'), 'v1');
    const clash = (await routes()).gatewayApi.gateways['default/clash'].listeners[0].conditions[0];
    assert.equal(clash.reason, 'PortUnavailable');
    dir.remove('extra.yaml');
    await eventually(async () => (await get(extra, 'any.example.com', '/').then(() => false, () => true)), 5000, 'the removed port is closed');
    assert.equal(await service_(httpPort, 'app.example.com', '/'), 'v1');
  });
});
