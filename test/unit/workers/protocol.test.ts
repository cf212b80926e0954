import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cgroupCpuLimit } from '../../../src/workers/cpus.ts';
import { ConfigReplica, configMessage } from '../../../src/workers/protocol.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, ingress, ingressClass, service, simpleIngress, slice, snapshotOf, svcBackend, testCerts, tlsSecret } from '../translate/fixtures.ts';
import type { KubeObject } from '../../../src/model/k8s.ts';
import type { RoutingConfig } from '../../../src/model/config.ts';
import { gateway, gatewayClass, grpcRoute, http, httpRoute, toService } from '../translate/gateway-fixtures.ts';

describe('shipping configs to workers', () => {
  test('a replica rebuilt from a whole config and then deltas has the primary\'s routes, and keeps unchanged hosts\' objects', () => {
    const translate = createTranslator();
    const objects: KubeObject[] = [
      ingressClass('portico'),
      service('a'),
      slice('a-1', 'a', [{ ip: '10.0.0.1' }]),
      simpleIngress('one', 'one.example.com', [['/', 'a']]),
      simpleIngress('two', 'two.example.com', [['/', 'a'], ['/x', 'a']]),
      ingress('catch-all', { defaultBackend: svcBackend('a') }),
    ];
    const first = translate(snapshotOf(objects), OPTIONS);
    const replica = new ConfigReplica();
    const whole = configMessage(first, undefined);
    assert.equal(whole.base, undefined);
    const r1 = replica.apply(structuredClone(whole))!;
    assert.deepEqual(r1.routes.map((r) => r.id), first.routes.map((r) => r.id));

    objects[3] = simpleIngress('one', 'one.example.com', [['/', 'a'], ['/new', 'a']]);
    const second = translate(snapshotOf(objects), OPTIONS, [{ type: 'updated', kind: 'Ingress', key: 'default/one' }]);
    const delta = configMessage(second, first);
    assert.equal(delta.base, first.serial);
    assert.deepEqual(delta.hosts.map(([h]) => h), ['one.example.com']);
    const r2 = replica.apply(structuredClone(delta))!;
    assert.deepEqual(r2.routes.map((r) => r.id), second.routes.map((r) => r.id));
    // Hosts the delta did not name keep the replica's own objects (its compiled routes stay).
    const twoBefore = r1.routes.filter((r) => r.host === 'two.example.com');
    const twoAfter = r2.routes.filter((r) => r.host === 'two.example.com');
    twoAfter.forEach((r, i) => assert.equal(r, twoBefore[i]));
    assert.deepEqual(r2.delta, { base: r1.serial, hosts: new Set(['one.example.com']), gateway: false });
    // The default backend did not change: not shipped again, and the replica keeps its object.
    assert.equal(delta.defaultBackend, undefined);
    assert.equal(r2.defaultBackend, r1.defaultBackend);
    assert.equal(r1.defaultBackend?.id, first.defaultBackend?.id);

    // A delta on a config the replica does not have is refused (the worker then asks for a whole one).
    assert.equal(new ConfigReplica().apply(structuredClone(delta)), undefined);
  });

  test('a changed certificate ships alone; the replica keeps the other hosts\' certificate objects', async () => {
    const certs = await testCerts();
    const translate = createTranslator();
    const tlsIngress = (name: string, host: string) => ingress(name, { tls: [{ hosts: [host], secretName: `${name}-tls` }], rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: svcBackend('a') }] } }] });
    const objects: KubeObject[] = [
      ingressClass('portico'),
      service('a'),
      slice('a-1', 'a', [{ ip: '10.0.0.1' }]),
      tlsIngress('one', 'one.example.com'),
      tlsSecret('one-tls', certs.foo.cert, certs.foo.key),
      tlsIngress('two', 'two.example.com'),
      tlsSecret('two-tls', certs.bar.cert, certs.bar.key),
    ];
    const first = translate(snapshotOf(objects), OPTIONS);
    assert.deepEqual([...first.certificates.keys()].sort(), ['one.example.com', 'two.example.com']);
    const replica = new ConfigReplica();
    const r1 = replica.apply(structuredClone(configMessage(first, undefined)))!;

    // The Secret of one host renewed: the delta carries that host's certificate, not the map.
    objects[4] = tlsSecret('one-tls', certs.wildcard.cert, certs.wildcard.key);
    const second = translate(snapshotOf(objects), OPTIONS, [{ type: 'updated', kind: 'Secret', key: 'default/one-tls' }]);
    const delta = configMessage(second, first);
    assert.equal(delta.base, first.serial);
    assert.equal(delta.certificates, undefined);
    assert.deepEqual(delta.certificateChanges?.map(([host]) => host), ['one.example.com']);
    assert.deepEqual(second.delta?.certificates, new Set(['one.example.com']), 'the translator names the host whose certificate changed');
    const r2 = replica.apply(structuredClone(delta))!;
    // Content, not class: the replica's map is patched (a PatchedMap), not a copy.
    assert.deepEqual(new Map(r2.certificates), new Map(second.certificates));
    assert.deepEqual(r2.delta?.certificates, new Set(['one.example.com']), 'the replica\'s config names it for the TLS layer');
    assert.equal(r2.certificates.get('one.example.com')?.cert, certs.wildcard.cert);
    assert.equal(r2.certificates.get('two.example.com'), r1.certificates.get('two.example.com'), 'the unchanged host keeps its object');

    // The TLS section removed from one Ingress: its host leaves the map in the replica too.
    objects[3] = simpleIngress('one', 'one.example.com', [['/', 'a']]);
    const third = translate(snapshotOf(objects), OPTIONS, [{ type: 'updated', kind: 'Ingress', key: 'default/one' }]);
    const r3 = replica.apply(structuredClone(configMessage(third, second)))!;
    assert.deepEqual([...r3.certificates.keys()], ['two.example.com']);
    assert.deepEqual(new Map(r3.certificates), new Map(third.certificates));
    assert.equal(r3.certificates.get('one.example.com'), undefined);
    assert.equal(r3.certificates.size, 1);
  });

  test('a renewed Secret: the primary ships its hosts without walking the certificate maps, and the replica patches them in', async () => {
    const certs = await testCerts();
    const translate = createTranslator();
    const tlsIngress = (name: string, host: string, secret: string) => ingress(name, { tls: [{ hosts: [host], secretName: secret }], rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: svcBackend('a') }] } }] });
    const objects: KubeObject[] = [ingressClass('portico'), service('a'), slice('a-1', 'a', [{ ip: '10.0.0.1' }]), tlsSecret('shared-tls', certs.foo.cert, certs.foo.key)];
    for (let i = 0; i < 40; i++) {
      objects.push(tlsIngress(`app${i}`, `app${i}.example.com`, `app${i}-tls`), tlsSecret(`app${i}-tls`, certs.foo.cert, certs.foo.key));
    }
    // Two Ingresses share one Secret: its renewal changes both hosts.
    objects.push(tlsIngress('s1', 's1.example.com', 'shared-tls'), tlsIngress('s2', 's2.example.com', 'shared-tls'));
    const first = translate(snapshotOf(objects), OPTIONS);
    const replica = new ConfigReplica();
    const r1 = replica.apply(structuredClone(configMessage(first, undefined)))!;
    assert.equal(r1.certificates.size, 42);

    objects[3] = tlsSecret('shared-tls', certs.wildcard.cert, certs.wildcard.key);
    const second = translate(snapshotOf(objects), OPTIONS, [{ type: 'updated', kind: 'Secret', key: 'default/shared-tls' }]);
    // The maps may be read host by host, never walked.
    const walk = () => {
      throw new Error('walked a certificate map');
    };
    const unwalkable = (config: RoutingConfig): RoutingConfig => {
      const map = config.certificates;
      const certificates = { get: (k: string) => map.get(k), has: (k: string) => map.has(k), size: map.size, entries: walk, keys: walk, values: walk, forEach: walk, [Symbol.iterator]: walk };
      return Object.create(config, { certificates: { value: certificates } }) as RoutingConfig;
    };
    const delta = configMessage(unwalkable(second), unwalkable(first));
    assert.deepEqual(delta.certificateChanges?.map(([host, c]) => [host, c?.cert]).sort(), [['s1.example.com', certs.wildcard.cert], ['s2.example.com', certs.wildcard.cert]]);
    const r2 = replica.apply(structuredClone(delta))!;
    assert.deepEqual(new Map(r2.certificates), new Map(second.certificates));
    assert.deepEqual(r2.delta?.certificates, new Set(['s1.example.com', 's2.example.com']));
    for (let i = 0; i < 40; i++) assert.equal(r2.certificates.get(`app${i}.example.com`), r1.certificates.get(`app${i}.example.com`));

    // Without the translator's names (another producer of configs), the maps are compared, as before.
    const { delta: translated, ...rest } = second;
    const plain = { ...rest, routes: second.routes, delta: { ...translated!, certificates: undefined } } as RoutingConfig;
    assert.deepEqual(configMessage(plain, first).certificateChanges?.map(([host]) => host).sort(), ['s1.example.com', 's2.example.com']);

    // A whole config ships a plain Map (v8's serializer keeps Maps, not other classes).
    const whole = configMessage(second, undefined);
    assert.ok(whole.certificates instanceof Map);
    assert.deepEqual(new Map(new ConfigReplica().apply(structuredClone(whole))!.certificates), new Map(second.certificates));
  });

  test('a changed HTTPRoute ships alone; the replica keeps the other HTTPRoutes\' objects', () => {
    const translate = createTranslator();
    const objects: KubeObject[] = [
      service('a'),
      slice('a-1', 'a', [{ ip: '10.0.0.1' }]),
      gatewayClass(),
      gateway('gw', [http('web', 8081)]),
      httpRoute('first', [{ name: 'gw' }], [{ backendRefs: [toService('a')] }], { hostnames: ['first.example.com'] }),
      httpRoute('second', [{ name: 'gw' }], [{ backendRefs: [toService('a')] }], { hostnames: ['second.example.com'] }),
    ];
    const first = translate(snapshotOf(objects), OPTIONS);
    const replica = new ConfigReplica();
    const r1 = replica.apply(structuredClone(configMessage(first, undefined)))!;
    objects[4] = httpRoute('first', [{ name: 'gw' }], [{ matches: [{ path: { type: 'Exact', value: '/x' } }], backendRefs: [toService('a')] }], { hostnames: ['first.example.com'] });
    const second = translate(snapshotOf(objects), OPTIONS, [{ type: 'updated', kind: 'HTTPRoute', key: 'default/first' }]);
    const delta = configMessage(second, first);
    assert.deepEqual(delta.gateway?.routes.map(([key]) => key), ['HTTPRoute/default/first']);
    const r2 = replica.apply(structuredClone(delta))!;
    assert.deepEqual(r2.routes.map((r) => r.id).sort(), second.routes.map((r) => r.id).sort());
    const secondOf = (c: RoutingConfig) => c.routes.find((r) => r.source.name === 'second');
    assert.equal(secondOf(r2), secondOf(r1));
  });

  test('an HTTPRoute and a GRPCRoute of the same name ship as two routes: changing one leaves the other in the replica', () => {
    const translate = createTranslator();
    const objects: KubeObject[] = [
      service('a'),
      slice('a-1', 'a', [{ ip: '10.0.0.1' }]),
      gatewayClass(),
      gateway('gw', [http('web', 8081)]),
      httpRoute('same', [{ name: 'gw' }], [{ backendRefs: [toService('a')] }], { hostnames: ['web.example.com'] }),
      grpcRoute('same', [{ name: 'gw' }], [{ matches: [{ method: { service: 'pkg.Svc' } }], backendRefs: [toService('a')] }], { hostnames: ['rpc.example.com'] }),
    ];
    const first = translate(snapshotOf(objects), OPTIONS);
    const whole = configMessage(first, undefined);
    assert.deepEqual(whole.gateway?.routes.map(([key]) => key).sort(), ['GRPCRoute/default/same', 'HTTPRoute/default/same']);
    const replica = new ConfigReplica();
    const r1 = replica.apply(structuredClone(whole))!;
    assert.deepEqual(r1.routes.map((r) => r.id).sort(), first.routes.map((r) => r.id).sort());

    objects[5] = grpcRoute('same', [{ name: 'gw' }], [{ matches: [{ method: { service: 'pkg.Svc', method: 'Get' } }], backendRefs: [toService('a')] }], { hostnames: ['rpc.example.com'] });
    const second = translate(snapshotOf(objects), OPTIONS, [{ type: 'updated', kind: 'GRPCRoute', key: 'default/same' }]);
    const delta = configMessage(second, first);
    assert.deepEqual(delta.gateway?.routes.map(([key]) => key), ['GRPCRoute/default/same']);
    const r2 = replica.apply(structuredClone(delta))!;
    assert.deepEqual(r2.routes.map((r) => `${r.source.kind} ${r.path}`).sort(), ['GRPCRoute /pkg.Svc/Get', 'HTTPRoute /']);
    const web = (c: RoutingConfig) => c.routes.find((r) => r.source.kind === 'HTTPRoute');
    assert.equal(web(r2), web(r1));
  });

  test('cgroup v2 cpu.max: a quota rounds up to whole CPUs; "max" is no limit', () => {
    assert.equal(cgroupCpuLimit('200000 100000\n'), 2);
    assert.equal(cgroupCpuLimit('150000 100000'), 2);
    assert.equal(cgroupCpuLimit('50000 100000'), 1);
    assert.equal(cgroupCpuLimit('max 100000'), undefined);
    assert.equal(cgroupCpuLimit(undefined), undefined);
  });
});
