// ingress-nginx access controls that portico does not apply close the route (403 for
// everyone, one error) instead of leaving it open with a warning.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePolicies } from '../../../src/middleware/registry.ts';
import type { PolicyConfig, Problem } from '../../../src/model/config.ts';
import { compose, request, routeConfig, serve, type TestServer } from './support.ts';

const ingress = { kind: 'Ingress', namespace: 'default', name: 'shop' };
const NGINX = 'nginx.ingress.kubernetes.io/';

function parse(annotations: Record<string, string>): { policies: PolicyConfig[]; lines: string[] } {
  const problems: Problem[] = [];
  const policies = parsePolicies(annotations, ingress, problems);
  return { policies, lines: problems.map((p) => `${p.severity} ${p.message}`) };
}

describe('ingress-nginx access controls', () => {
  test('an untranslated allow-list, on an Ingress with no portico.dev annotation: one error, the route closed', () => {
    const r = parse({ [`${NGINX}whitelist-source-range`]: '10.0.0.0/8' });
    assert.deepEqual(r.policies, [{ name: 'ingress-nginx-access', config: { annotations: [`${NGINX}whitelist-source-range`] } }]);
    assert.equal(r.lines.length, 1);
    assert.match(r.lines[0]!, /^error annotation nginx\.ingress\.kubernetes\.io\/whitelist-source-range restricts who may use this Ingress.*every client gets 403/);
  });

  test('authentication annotations: one error naming them all', () => {
    const r = parse({ [`${NGINX}auth-type`]: 'basic', [`${NGINX}auth-secret`]: 'users', [`${NGINX}auth-url`]: 'http://auth/check', 'portico.dev/rate-limit': '10' });
    assert.equal(r.policies[0]!.name, 'ingress-nginx-access');
    const errors = r.lines.filter((l) => l.startsWith('error'));
    assert.deepEqual(errors.length, 1);
    assert.match(errors[0]!, /annotations nginx\.ingress\.kubernetes\.io\/auth-url, nginx\.ingress\.kubernetes\.io\/auth-type restrict/);
    // auth-secret alone restricts nothing: it stays a warning.
    assert.ok(r.lines.some((l) => l.startsWith('warning') && l.includes(`${NGINX}auth-secret`)));
  });

  test('translated (the portico.dev equivalent is there), or client certificates off: nothing closed, the nginx one is a warning', () => {
    const r = parse({ [`${NGINX}whitelist-source-range`]: '10.0.0.0/8', 'portico.dev/ip-allow': '10.0.0.0/8', [`${NGINX}auth-tls-verify-client`]: 'off' });
    assert.ok(!r.policies.some((p) => p.name === 'ingress-nginx-access'));
    assert.ok(r.policies.some((p) => p.name === 'ip-allow'));
    assert.ok(r.lines.every((l) => l.startsWith('warning')), r.lines.join('\n'));
  });

  describe('a closed route, served', () => {
    let server: TestServer;
    before(async () => {
      const { policies } = parse({ [`${NGINX}auth-type`]: 'basic' });
      server = await serve(compose(policies, routeConfig({ policies })), routeConfig({ policies }));
    });
    after(() => server.close());

    test('answers 403 to every client and never reaches the pod', async () => {
      const reply = await request(server, '/anything');
      assert.equal(reply.status, 403);
      assert.equal(reply.body, 'forbidden\n', 'the generic text, as for an IP list; the reason is in the access log');
    });
  });
});
