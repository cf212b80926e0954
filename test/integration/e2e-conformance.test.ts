// Black-box: the portico CLI in standalone mode, real echo backends on loopback, and
// the scenarios of the Kubernetes ingress-controller-conformance suite (host rules
// with TLS and wildcards, path rules, default backend, ingress class, load balancing).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import selfsigned from 'selfsigned';
import { startEchoServer } from '../../examples/echo-server.ts';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints, tlsSecret, type Obj } from '../support/objects.ts';
import { get, send } from '../support/http.ts';

type Echo = Awaited<ReturnType<typeof startEchoServer>>;

describe('ingress conformance scenarios (standalone mode)', () => {
  const dir = new ManifestDir();
  const echoes: Echo[] = [];
  let portico: PorticoProcess;
  let cert: { cert: string; private: string };

  async function service(name: string, replicas = 1): Promise<Obj[]> {
    const ports: number[] = [];
    for (let i = 0; i < replicas; i++) {
      const echo = await startEchoServer({ name, namespace: 'default' });
      echoes.push(echo);
      ports.push(echo.port);
    }
    return serviceWithEndpoints(name, ports);
  }

  before(async () => {
    cert = await selfsigned.generate([{ name: 'commonName', value: 'foo.bar.com' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'foo.bar.com' }] }],
    });
    const objects: Obj[] = [
      ingressClass('portico', { isDefault: true }),
      ingressClass('other', { controller: 'example.com/other-controller' }),
      tlsSecret('conformance-tls', cert.cert, cert.private),
      // host_rules.feature
      // The conformance suite expects plain HTTP to be served, so the default HTTPS redirect is off here.
      ingress('host-rules', {
        tls: [{ hosts: ['foo.bar.com'], secretName: 'conformance-tls' }],
        rules: [
          { host: '*.foo.com', paths: [{ path: '/', service: 'wildcard-foo-com', port: 8080 }] },
          { host: 'foo.bar.com', paths: [{ path: '/', service: 'foo-bar-com', port: 'http' }] },
        ],
      }, { annotations: { 'portico.dev/tls-redirect': 'false' } }),
      // path_rules.feature
      ingress('path-rules', {
        rules: [
          { host: 'exact-path-rules', paths: [{ path: '/foo', pathType: 'Exact', service: 'foo-exact', port: 8080 }] },
          {
            host: 'prefix-path-rules',
            paths: [
              { path: '/foo', service: 'foo-prefix', port: 8080 },
              { path: '/aaa/bbb', service: 'aaa-slash-bbb-prefix', port: 8080 },
              { path: '/aaa', service: 'aaa-prefix', port: 8080 },
            ],
          },
          {
            host: 'mixed-path-rules',
            paths: [
              { path: '/foo', service: 'foo-prefix', port: 8080 },
              { path: '/foo', pathType: 'Exact', service: 'foo-exact', port: 8080 },
            ],
          },
          {
            host: 'trailing-slash-path-rules',
            paths: [
              { path: '/aaa/bbb/', service: 'aaa-slash-bbb-slash-prefix', port: 8080 },
              { path: '/foo/', pathType: 'Exact', service: 'foo-slash-exact', port: 8080 },
            ],
          },
        ],
      }),
      // ingress_class.feature: a class nobody implements, and another controller's class
      ingress('invalid-class', { className: 'some-invalid-class-name', rules: [{ host: 'ingress-class', paths: [{ path: '/', service: 'ingress-class-prefix', port: 8080 }] }] }),
      ingress('other-class', { className: 'other', rules: [{ host: 'other-class', paths: [{ path: '/', service: 'ingress-class-prefix', port: 8080 }] }] }),
      // no class at all: taken by the default portico class
      ingress('no-class', { className: null, rules: [{ host: 'no-class', paths: [{ path: '/', service: 'foo-prefix', port: 8080 }] }] }),
    ];
    const services: [string, number][] = [
      ['wildcard-foo-com', 1], ['foo-bar-com', 1], ['foo-exact', 1], ['foo-prefix', 1], ['aaa-slash-bbb-prefix', 1], ['aaa-prefix', 1],
      ['aaa-slash-bbb-slash-prefix', 1], ['foo-slash-exact', 1], ['ingress-class-prefix', 1],
    ];
    for (const [name, replicas] of services) {
      const objs = await service(name, replicas);
      // The conformance Ingresses name port 8080 by number; the Service port is 8080 named "http".
      (objs[0] as { spec: { ports: { port: number }[] } }).spec.ports[0]!.port = 8080;
      objects.push(...objs);
    }
    dir.write('conformance.yaml', objects);
    portico = await startPortico(['--manifests', dir.path]);
  });

  after(async () => {
    const code = await portico?.stop();
    assert.equal(code, 0, 'portico exits 0 on SIGTERM');
    await Promise.all(echoes.map((e) => e.close()));
    dir.cleanup();
  });

  const servedBy = async (host: string, path: string) => {
    const r = await get(portico.http, host, path);
    return { status: r.status, service: r.status === 200 ? (r.json().service as string) : undefined, path: r.status === 200 ? (r.json().path as string) : undefined, r };
  };

  describe('host rules', () => {
    test('TLS traffic to foo.bar.com verifies the hostname and reaches foo-bar-com', async () => {
      const r = await send(portico.https, { host: 'foo.bar.com', https: { servername: 'foo.bar.com', ca: cert.cert } });
      assert.equal(r.status, 200);
      assert.equal(r.json().service, 'foo-bar-com');
      assert.equal(r.json().host, 'foo.bar.com');
      assert.equal((r.json().headers as Record<string, string>)['x-forwarded-proto'], 'https');
    });
    test('plain traffic to foo.bar.com reaches foo-bar-com', async () => {
      const r = await servedBy('foo.bar.com', '/');
      assert.equal(r.status, 200);
      assert.equal(r.service, 'foo-bar-com');
      assert.equal(r.r.json().host, 'foo.bar.com');
    });
    test('a host that does not match is 404', async () => {
      assert.equal((await servedBy('subdomain.bar.com', '/')).status, 404);
    });
    test('a wildcard matches one label', async () => {
      const r = await servedBy('bar.foo.com', '/');
      assert.equal(r.service, 'wildcard-foo-com');
      assert.equal(r.r.json().host, 'bar.foo.com');
    });
    test('a wildcard does not match two labels or none', async () => {
      assert.equal((await servedBy('baz.bar.foo.com', '/')).status, 404);
      assert.equal((await servedBy('foo.com', '/')).status, 404);
    });
    test('host matching ignores case, port and a trailing dot', async () => {
      assert.equal((await servedBy('FOO.Bar.com:8080', '/')).service, 'foo-bar-com');
      assert.equal((await servedBy('foo.bar.com.', '/')).service, 'foo-bar-com');
    });
  });

  describe('path rules', () => {
    const cases: [string, string, number, string?, string?][] = [
      ['exact-path-rules', '/foo', 200, 'foo-exact', '/foo'],
      ['exact-path-rules', '/foo/', 404],
      ['exact-path-rules', '/FOO', 404],
      ['exact-path-rules', '/bar', 404],
      ['prefix-path-rules', '/foo', 200, 'foo-prefix', '/foo'],
      ['prefix-path-rules', '/foo/', 200, 'foo-prefix', '/foo/'],
      ['prefix-path-rules', '/FOO', 404],
      ['prefix-path-rules', '/aaa/bbb', 200, 'aaa-slash-bbb-prefix', '/aaa/bbb'],
      ['prefix-path-rules', '/aaa/bbb/ccc', 200, 'aaa-slash-bbb-prefix', '/aaa/bbb/ccc'],
      ['prefix-path-rules', '/aaa/ccc', 200, 'aaa-prefix', '/aaa/ccc'],
      ['prefix-path-rules', '/aaaccc', 404],
      ['mixed-path-rules', '/foo', 200, 'foo-exact', '/foo'],
      ['mixed-path-rules', '/foo/x', 200, 'foo-prefix', '/foo/x'],
      ['trailing-slash-path-rules', '/aaa/bbb', 200, 'aaa-slash-bbb-slash-prefix', '/aaa/bbb'],
      ['trailing-slash-path-rules', '/aaa/bbb/', 200, 'aaa-slash-bbb-slash-prefix', '/aaa/bbb/'],
      ['trailing-slash-path-rules', '/foo', 404],
      ['trailing-slash-path-rules', '/foo/', 200, 'foo-slash-exact', '/foo/'],
    ];
    for (const [host, path, status, service, seenPath] of cases) {
      test(`${host}${path} -> ${status}${service ? ' from ' + service : ''}`, async () => {
        const r = await servedBy(host, path);
        assert.equal(r.status, status);
        if (service) {
          assert.equal(r.service, service);
          assert.equal(r.path, seenPath);
        }
      });
    }
  });

  describe('ingress class', () => {
    test('an Ingress with an unknown class is not served', async () => {
      assert.equal((await servedBy('ingress-class', '/')).status, 404);
    });
    test("another controller's class is not served", async () => {
      assert.equal((await servedBy('other-class', '/')).status, 404);
    });
    test('an Ingress without class is served by the default class', async () => {
      assert.equal((await servedBy('no-class', '/')).service, 'foo-prefix');
    });
  });
});

describe('default backend and load balancing (standalone mode)', () => {
  const dir = new ManifestDir();
  const echoes: Echo[] = [];
  let portico: PorticoProcess;

  before(async () => {
    const ports: number[] = [];
    for (let i = 0; i < 10; i++) {
      const echo = await startEchoServer({ name: 'echo-service', namespace: 'default' });
      echoes.push(echo);
      ports.push(echo.port);
    }
    dir.write('default-backend.yaml', [
      ingressClass('portico'),
      ingress('default-backend', { defaultBackend: { service: 'echo-service', port: 8080 } }),
      ...serviceWithEndpoints('echo-service', ports, { port: 8080 }),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
  });

  after(async () => {
    assert.equal(await portico?.stop(), 0);
    await Promise.all(echoes.map((e) => e.close()));
    dir.cleanup();
  });

  describe('default backend', () => {
    for (const [method, host, path] of [
      ['GET', 'my-host', '/'],
      ['GET', 'my-host', '/sub-path'],
      ['POST', 'some-host', '/'],
      ['PUT', '127.0.0.1', '/resource'],
      ['DELETE', 'some-host', '/resource'],
      ['PATCH', 'my-host', '/resource'],
    ] as const) {
      test(`${method} ${host}${path} reaches the default backend`, async () => {
        const r = await send(portico.http, { method, host, path, headers: { 'user-agent': 'Go-http-client/1.1' } });
        assert.equal(r.status, 200);
        const body = r.json();
        assert.equal(body.service, 'echo-service');
        assert.equal(body.method, method);
        assert.equal(body.path, path);
        assert.equal((body.headers as Record<string, string>)['user-agent'], 'Go-http-client/1.1');
        for (const h of ['content-length', 'content-type', 'date', 'server']) assert.ok(r.headers[h], `response has ${h}`);
      });
    }
  });

  describe('load balancing', () => {
    test('100 requests reach all 10 pods', async () => {
      const pods = new Set<string>();
      for (let i = 0; i < 100; i++) {
        const r = await get(portico.http, 'load-balancing', '/');
        assert.equal(r.status, 200);
        pods.add(r.json().pod as string);
      }
      assert.equal(pods.size, 10);
    });
  });
});
