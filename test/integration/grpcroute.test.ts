// Black-box: Gateway API GRPCRoute in standalone mode, through the real CLI, with real
// gRPC servers and clients (@grpc/grpc-js): the client speaks h2c to the Gateway's HTTP
// listener; GRPCRoute matches (service and method, method only, service only, headers)
// and weights pick the pod; portico speaks h2c to the pods although their Service ports
// say nothing (a GRPCRoute implies it); status and rules show in /routes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import selfsigned from 'selfsigned';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, serviceWithEndpoints, tlsSecret, type Obj } from '../support/objects.ts';
import { freePort, gateway, gatewayClass, grpcRoute } from '../support/gateway-objects.ts';
import { echoClient, grpc, startGrpcServer, startProtocolTap, unary, type EchoClient, type GrpcServer, type ProtocolTap } from '../support/grpc.ts';
import { get } from '../support/http.ts';

/** Which pod answered a unary call: its reply is "<pod>:<path>:<request>". */
function podOf(reply: Buffer | undefined): string {
  return reply?.toString().split(':')[0] ?? '(no reply)';
}

describe('GRPCRoute in standalone mode, black box', () => {
  const dir = new ManifestDir();
  const pods: GrpcServer[] = [];
  const taps: ProtocolTap[] = [];
  /** One client (one h2c connection) per authority and service name. */
  const clients = new Map<string, EchoClient>();
  let portico: PorticoProcess;
  let port: number;
  let tlsPort: number;
  let cert: { cert: string; private: string };

  /** A gRPC pod serving the Echo methods under `services`, behind a tap, and its Service. */
  async function grpcService(name: string, services: string[] = ['test.Echo']): Promise<Obj[]> {
    const pod = await startGrpcServer(name, services);
    const tap = await startProtocolTap(pod.port);
    pods.push(pod);
    taps.push(tap);
    return serviceWithEndpoints(name, [tap.port]);
  }

  const client = (authority: string, service = 'test.Echo') => {
    const key = `${authority} ${service}`;
    let c = clients.get(key);
    if (c === undefined) clients.set(key, (c = echoClient(port, authority, { service })));
    return c;
  };

  async function call(authority: string, service: string, metadata: Record<string, string> = {}): Promise<{ pod: string; reply: string; code: number | undefined }> {
    const m = new grpc.Metadata();
    for (const [k, v] of Object.entries(metadata)) m.set(k, v);
    const { err, res } = await unary(client(authority, service), 'unary', Buffer.from('hi'), {}, m);
    return { pod: podOf(res), reply: res?.toString() ?? '', code: err?.code ?? grpc.status.OK };
  }

  const routes = async (): Promise<Record<string, any>> => (await get(portico.admin, 'localhost', '/routes')).json();

  before(async () => {
    port = await freePort();
    tlsPort = await freePort();
    cert = await selfsigned.generate([{ name: 'commonName', value: 'secure.example.com' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'secure.example.com' }] }],
    });
    dir.write('gateway.yaml', [
      gatewayClass(),
      gateway('gw', [
        { name: 'grpc', port, protocol: 'HTTP' },
        { name: 'grpcs', port: tlsPort, protocol: 'HTTPS', hostname: 'secure.example.com', tls: { certificateRefs: [{ name: 'secure-cert' }] } },
      ]),
      tlsSecret('secure-cert', cert.cert, cert.private),
    ]);
    dir.write('services.yaml', [
      ...(await grpcService('exact')),
      ...(await grpcService('method-only', ['test.Echo', 'test.Other'])),
      ...(await grpcService('canary')),
      ...(await grpcService('service-only')),
      ...(await grpcService('heavy')),
      ...(await grpcService('light')),
    ]);
    dir.write('routes.yaml', [
      grpcRoute('echo', {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['grpc.example.com'],
        rules: [
          { matches: [{ method: { service: 'test.Echo', method: 'Unary' } }], backendRefs: [{ name: 'exact', port: 80 }] },
          { matches: [{ method: { method: 'Unary' } }], backendRefs: [{ name: 'method-only', port: 80 }] },
          { matches: [{ method: { service: 'test.Echo', method: 'Unary' }, headers: [{ name: 'x-track', value: 'canary' }] }], backendRefs: [{ name: 'canary', port: 80 }] },
          { matches: [{ method: { service: 'test.Echo' } }], backendRefs: [{ name: 'service-only', port: 80 }] },
        ],
      }),
      // No exact rule here: a service-only match outranks a method-only one (more characters of service).
      grpcRoute('order', {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['order.example.com'],
        rules: [
          { matches: [{ method: { method: 'Unary' } }], backendRefs: [{ name: 'method-only', port: 80 }] },
          { matches: [{ method: { service: 'test.Echo' } }], backendRefs: [{ name: 'service-only', port: 80 }] },
        ],
      }),
      grpcRoute('split', {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['split.example.com'],
        rules: [{ backendRefs: [{ name: 'heavy', port: 80, weight: 3 }, { name: 'light', port: 80, weight: 1 }] }],
      }),
      grpcRoute('secure', {
        parentRefs: [{ name: 'gw', sectionName: 'grpcs' }],
        rules: [{ matches: [{ method: { service: 'test.Echo', method: 'Unary' } }], backendRefs: [{ name: 'exact', port: 80 }] }],
      }),
      grpcRoute('filters', {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['filters.example.com'],
        rules: [
          {
            filters: [
              { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-set', value: 'by-route' }], add: [{ name: 'x-added', value: 'yes' }], remove: ['x-drop'] } },
              { type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'x-response', value: 'from-route' }], remove: ['x-server'] } },
            ],
            backendRefs: [{ name: 'exact', port: 80 }],
          },
        ],
      }),
      grpcRoute('broken', {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['broken.example.com'],
        rules: [{ backendRefs: [{ name: 'no-such-service', port: 80 }] }],
      }),
    ]);
    // Bad input: a GRPCRoute that is not one (skipped), and one with a match the spec forbids (that match skipped).
    dir.write('bad.yaml', [
      grpcRoute('malformed', { parentRefs: [{ name: 'gw' }], rules: 'oops' }),
      grpcRoute('half-valid', {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['half.example.com'],
        rules: [
          { matches: [{ method: {} }], backendRefs: [{ name: 'canary', port: 80 }] },
          { matches: [{ method: { service: 'test.Echo', method: 'Unary' } }], backendRefs: [{ name: 'exact', port: 80 }] },
        ],
      }),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
    await eventually(async () => (await call('grpc.example.com', 'test.Echo')).code === grpc.status.OK, 5000, 'the Gateway listener serves gRPC');
  });

  after(async () => {
    for (const c of clients.values()) c.close();
    await portico?.stop();
    await Promise.all([...pods.map((p) => p.close()), ...taps.map((t) => t.close())]);
    dir.cleanup();
  });

  test('service and method (Exact) routes to its pod, which gets the call on its own path', async () => {
    const got = await call('grpc.example.com', 'test.Echo');
    assert.equal(got.code, grpc.status.OK);
    assert.equal(got.reply, 'exact:/test.Echo/Unary:hi');
  });

  test('a method-only match takes that method of any service', async () => {
    const got = await call('grpc.example.com', 'test.Other');
    assert.equal(got.code, grpc.status.OK);
    assert.equal(got.reply, 'method-only:/test.Other/Unary:hi');
  });

  test('a header match wins over the same method without one; other header values do not match', async () => {
    assert.equal((await call('grpc.example.com', 'test.Echo', { 'x-track': 'canary' })).pod, 'canary');
    assert.equal((await call('grpc.example.com', 'test.Echo', { 'x-track': 'stable' })).pod, 'exact');
  });

  test('a service-only match takes the service\'s other methods, streaming ones included', async () => {
    const messages: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const stream = client('grpc.example.com').serverStream(Buffer.from('2'));
      stream.on('data', (b: Buffer) => messages.push(b.toString()));
      stream.on('error', reject);
      stream.on('end', () => resolve());
    });
    assert.deepEqual(messages, ['service-only message 0', 'service-only message 1']);
  });

  test('precedence is the GRPCRoute spec\'s, not the path kind\'s: service-only before method-only', async () => {
    assert.equal((await call('order.example.com', 'test.Echo')).reply, 'service-only:/test.Echo/Unary:hi');
    assert.equal((await call('order.example.com', 'test.Other')).reply, 'method-only:/test.Other/Unary:hi');
  });

  test('a call no rule matches is UNIMPLEMENTED for the client', async () => {
    const c = client('grpc.example.com', 'test.Other');
    const messages = await new Promise<grpc.ServiceError | undefined>((resolve) => {
      const stream = c.serverStream(Buffer.from('1'));
      stream.on('data', () => {});
      stream.on('error', (err: grpc.ServiceError) => resolve(err));
      stream.on('end', () => resolve(undefined));
    });
    assert.equal(messages?.code, grpc.status.UNIMPLEMENTED);
  });

  test('on an HTTPS listener the client speaks h2 over TLS (ALPN); the pod still gets h2c', async () => {
    const c = echoClient(tlsPort, 'secure.example.com', { ca: Buffer.from(cert.cert) });
    clients.set('secure', c);
    const { err, res } = await unary(c, 'unary', Buffer.from('tls'));
    assert.equal(err, null);
    assert.equal(res?.toString(), 'exact:/test.Echo/Unary:tls');
  });

  test('bad GRPCRoutes: one message each saying what and where; the rest is served', async () => {
    const problems = ((await routes()).problems as { message: string }[]).map((p) => p.message);
    assert.ok(problems.includes('bad.yaml:1: spec.rules: must be a list'), problems.join('\n'));
    assert.ok(problems.includes('spec.rules[0].matches[0].method: one of service and method must be set; this match is not served'), problems.join('\n'));
    assert.equal((await call('half.example.com', 'test.Echo')).reply, 'exact:/test.Echo/Unary:hi');
    assert.equal((await call('grpc.example.com', 'test.Echo')).reply, 'exact:/test.Echo/Unary:hi');
  });

  test('RequestHeaderModifier and ResponseHeaderModifier act on the call\'s metadata', async () => {
    const metadata = new grpc.Metadata();
    metadata.set('x-set', 'by-client');
    metadata.set('x-drop', 'secret');
    const headers = await new Promise<grpc.Metadata>((resolve, reject) => {
      const c = client('filters.example.com');
      const call = c.unary(Buffer.from('hi'), metadata, {}, (err) => err && reject(err));
      call.on('metadata', resolve);
    });
    // What reached the pod (echoed by it), then what portico changed on the way back.
    assert.deepEqual(headers.get('echo-x-set'), ['by-route']);
    assert.deepEqual(headers.get('echo-x-added'), ['yes']);
    assert.deepEqual(headers.get('echo-x-drop'), []);
    assert.deepEqual(headers.get('x-response'), ['from-route']);
    assert.deepEqual(headers.get('x-server'), []);
  });

  test('weights 3:1 split the calls between both pods, roughly in proportion', async () => {
    const counts = new Map<string, number>();
    const calls = 200;
    for (let i = 0; i < calls; i++) {
      const got = await call('split.example.com', 'test.Echo');
      assert.equal(got.code, grpc.status.OK);
      counts.set(got.pod, (counts.get(got.pod) ?? 0) + 1);
    }
    assert.deepEqual([...counts.keys()].sort(), ['heavy', 'light']);
    // Expected 150 of 200 (standard deviation about 6): far outside these bounds is a bug.
    const heavy = counts.get('heavy')!;
    assert.ok(heavy >= 115 && heavy <= 185, `heavy got ${heavy} of ${calls}`);
  });

  test('portico speaks h2c to the pods: every connection to them opened with the HTTP/2 preface', () => {
    // Every pod has had calls by now (the tests of this suite run in order).
    assert.deepEqual(
      taps.map((t) => t.connections.length > 0),
      taps.map(() => true),
    );
    assert.deepEqual([...new Set(taps.flatMap((t) => t.connections))], ['h2c']);
  });

  test('a backendRef to a missing Service: UNAVAILABLE for the client (as the GRPCRoute spec says), ResolvedRefs False in the status', async () => {
    const got = await call('broken.example.com', 'test.Echo');
    assert.equal(got.code, grpc.status.UNAVAILABLE);
    const status = (await routes()).gatewayApi.grpcRoutes['default/broken'];
    const conditions = status.parents[0].conditions.map((c: { type: string; status: string; reason: string }) => `${c.type}=${c.status}:${c.reason}`);
    assert.deepEqual(conditions, ['Accepted=True:Accepted', 'ResolvedRefs=False:BackendNotFound']);
  });

  test('/routes lists the GRPCRoute rules with their paths, header conditions and h2c, and their status', async () => {
    const view = await routes();
    const echo = view.gatewayApi.routes.filter((r: any) => r.grpcRoute === 'default/echo');
    // In precedence order (the GRPCRoute spec's: characters of service, then of method,
    // then header matches): a call to /test.Echo/Unary matches all four.
    assert.deepEqual(
      echo.map((r: any) => [r.pathType, r.path, r.headers ?? [], r.backends.map((b: any) => b.service)]),
      [
        ['Exact', '/test.Echo/Unary', ['x-track Exact canary'], ['default/canary']],
        ['Exact', '/test.Echo/Unary', [], ['default/exact']],
        ['Prefix', '/test.Echo/', [], ['default/service-only']],
        ['RegularExpression', '/[^/]+/Unary', [], ['default/method-only']],
      ],
    );
    assert.ok(echo.every((r: any) => r.policies.includes('upstream-protocol') && r.port === port && r.host === 'grpc.example.com'));
    const split = view.gatewayApi.routes.find((r: any) => r.grpcRoute === 'default/split');
    assert.deepEqual(split.backends.map((b: any) => [b.service, b.weight]), [['default/heavy', 3], ['default/light', 1]]);
    const parents = view.gatewayApi.grpcRoutes['default/echo'].parents;
    assert.deepEqual(parents.map((p: any) => p.parentRef.name), ['gw']);
    assert.deepEqual(parents[0].conditions.map((c: any) => `${c.type}=${c.status}:${c.reason}`), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
    const listener = view.gatewayApi.gateways['default/gw'].listeners[0];
    assert.equal(listener.attachedRoutes, 6);
    assert.ok(listener.supportedKinds.some((k: { kind: string }) => k.kind === 'GRPCRoute'));
  });
});
