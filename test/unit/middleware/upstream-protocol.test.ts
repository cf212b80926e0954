import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import selfsigned from 'selfsigned';
import { profileKey, upstreamProtocolPolicy } from '../../../src/middleware/upstream-protocol.ts';
import { SharedStateMap } from '../../../src/middleware/registry.ts';
import { compose, parseWith, request, routeConfig, serve, type TestServer } from './support.ts';

const PROTOCOL = 'portico.dev/upstream-protocol';
const CA_SECRET = 'portico.dev/upstream-ca-secret';
const SKIP = 'portico.dev/upstream-insecure-skip-verify';

let caPem = '';
const b64 = (s: string) => Buffer.from(s).toString('base64');

before(async () => {
  const ca = await selfsigned.generate([{ name: 'commonName', value: 'test-ca' }], { keyType: 'ec', algorithm: 'sha256' });
  caPem = ca.cert;
});

describe('upstream-protocol: parse', () => {
  test('http and h2c need nothing else; case does not matter', () => {
    assert.deepEqual(parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'H2C' }).config, { protocol: 'h2c' });
    assert.deepEqual(parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'http' }).config, { protocol: 'http' });
  });

  test('https without a CA verifies against the system CAs', () => {
    const r = parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'https' });
    assert.deepEqual(r.config, { protocol: 'https' });
    assert.deepEqual(r.lines, []);
  });

  test('https with a CA from a Secret of the namespace (ca.crt, base64 as on the wire)', () => {
    const r = parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'h2', [CA_SECRET]: 'pod-ca' }, { 'pod-ca': { data: { 'ca.crt': b64(caPem) } } });
    assert.deepEqual(r.config, { protocol: 'h2', caSecret: 'pod-ca', ca: caPem });
    assert.deepEqual(r.lines, []);
  });

  test('insecure-skip-verify', () => {
    const r = parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'https', [SKIP]: 'yes' });
    assert.deepEqual(r.config, { protocol: 'https', insecureSkipVerify: true });
    const both = parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'https', [SKIP]: 'true', [CA_SECRET]: 'pod-ca' }, {});
    assert.deepEqual(both.config, { protocol: 'https', insecureSkipVerify: true });
    assert.match(both.lines[0]!, /upstream-ca-secret: not used/);
  });

  test('an unknown protocol is reported; the pods get plain HTTP', () => {
    const r = parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'grpc' });
    assert.equal(r.config, undefined);
    assert.match(r.lines[0]!, /^error InvalidAnnotation: .*upstream-protocol: invalid value "grpc": expected http, https, h2c or h2/);
  });

  test('CA problems fail closed: reported, and verification stays on', () => {
    const secrets = {
      'no-key': { data: { 'tls.crt': b64(caPem) } },
      garbage: { data: { 'ca.crt': b64('not a certificate') } },
    };
    for (const [name, message] of [
      ['missing', /Secret default\/missing not found/],
      ['no-key', /Secret default\/no-key has no ca\.crt/],
      ['garbage', /ca\.crt in Secret default\/garbage is not a PEM certificate/],
    ] as const) {
      const r = parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'https', [CA_SECRET]: name }, secrets);
      assert.deepEqual(r.config, { protocol: 'https', caSecret: name }, name);
      assert.equal(r.problems[0]!.severity, 'error');
      assert.match(r.problems[0]!.message, message);
      assert.match(r.problems[0]!.message, /verified against the system's CAs/);
    }
    const noAccess = parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'https', [CA_SECRET]: 'x' });
    assert.deepEqual(noAccess.config, { protocol: 'https', caSecret: 'x' });
  });

  test('an invalid skip-verify value keeps verification on', () => {
    const r = parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'https', [SKIP]: 'perhaps' });
    assert.deepEqual(r.config, { protocol: 'https' });
    assert.match(r.lines[0]!, /insecure-skip-verify: invalid value "perhaps".*verified/);
  });

  test('TLS settings with a protocol without TLS, or without a protocol, are reported as having no effect', () => {
    const r = parseWith(upstreamProtocolPolicy, { [PROTOCOL]: 'h2c', [SKIP]: 'true' });
    assert.deepEqual(r.config, { protocol: 'h2c' });
    assert.match(r.lines[0]!, /no TLS to the pods/);
    const alone = parseWith(upstreamProtocolPolicy, { [CA_SECRET]: 'x' });
    assert.equal(alone.config, undefined);
    assert.match(alone.lines[0]!, /has no effect without portico\.dev\/upstream-protocol/);
  });
});

describe('upstream profiles', () => {
  test('keys differ by protocol, CA and verification, and are equal for equal settings', () => {
    const keys = [
      profileKey({ protocol: 'https' }),
      profileKey({ protocol: 'h2' }),
      profileKey({ protocol: 'https', ca: caPem }),
      profileKey({ protocol: 'https', ca: caPem + '\n' }),
      profileKey({ protocol: 'https', insecureSkipVerify: true }),
    ];
    assert.equal(new Set(keys).size, keys.length);
    assert.equal(profileKey({ protocol: 'https', ca: caPem, caSecret: 'a' }), profileKey({ protocol: 'https', ca: caPem, caSecret: 'b' }));
    assert.equal(profileKey({ protocol: 'http' }), 'http');
  });
});

describe('upstream-protocol at runtime', () => {
  let server: TestServer;
  let plain: TestServer;
  before(async () => {
    const shared = new SharedStateMap();
    const policies = [{ name: 'upstream-protocol', config: { protocol: 'https', caSecret: 'pod-ca', ca: caPem } }];
    const route = routeConfig({ policies });
    server = await serve(compose(policies, route, shared), route);
    const plainPolicies = [{ name: 'upstream-protocol', config: { protocol: 'http' } }];
    plain = await serve(compose(plainPolicies, routeConfig({ policies: plainPolicies }), shared), routeConfig());
  });
  after(async () => {
    await Promise.all([server, plain].map((s) => s?.close()));
  });

  test('the forwarder gets the profile: protocol, CA, verification', async () => {
    const up = (await request(server, '/')).json().upstream;
    assert.equal(up.protocol, 'https');
    assert.equal(up.ca, caPem);
    assert.equal(up.insecureSkipVerify, undefined);
    assert.match(up.key, /^https\|ca:[0-9a-f]{16}$/);
    assert.deepEqual((await request(plain, '/')).json().upstream, { key: 'http', protocol: 'http' });
  });
});
