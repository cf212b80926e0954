import assert from 'node:assert/strict';
import { test } from 'node:test';
import { flatString, internString } from '../../../src/util/flat-string.ts';
import { sanitize } from '../../../src/sources/sanitize.ts';

test('flatString keeps every string as it was: ASCII, non-ASCII, lone surrogates, short and long', () => {
  const file = 'prefix ' + 'x'.repeat(5000) + ' suffix';
  for (const text of ['', 'a', 'twelve chars', 'thirteen char', file.slice(7, 5007), 'héllo wörld ✓ long enough', 'lone \ud800 surrogate here', 'ns0/ing0|app0.bench.test|Prefix|/']) {
    assert.equal(flatString(text), text);
  }
});

test('internString gives equal values one shared copy, whatever string they were cut from', () => {
  const a = internString(('spec.rules[0].http.paths[0] ' + 'tail').slice(0, 27));
  const b = internString(['spec.rules[0]', '.http.paths[0]'].join(''));
  assert.equal(a, 'spec.rules[0].http.paths[0]');
  assert.equal(b, a);
  // Many distinct values (the table is bounded and starts over): still the same values back.
  for (let i = 0; i < 50_000; i++) assert.equal(internString(`10.0.${i >> 8}.${i & 255}`), `10.0.${i >> 8}.${i & 255}`);
});

test('EndpointSlices share conditions objects, which stay frozen and keep their fields', () => {
  const slice = (ready: boolean) =>
    sanitize({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 's', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'svc' } },
      addressType: 'IPv4',
      endpoints: [
        { addresses: ['10.0.0.1'], conditions: { ready } },
        { addresses: ['10.0.0.2'], conditions: { ready, serving: true } },
        { addresses: ['10.0.0.3'], conditions: { ready } },
      ],
    }).object as { endpoints: { conditions: object }[] };
  const one = slice(true);
  const two = slice(true);
  assert.deepEqual(one.endpoints.map((e) => e.conditions), [{ ready: true }, { ready: true, serving: true }, { ready: true }]);
  assert.deepEqual(slice(false).endpoints[0]!.conditions, { ready: false });
  assert.equal(one.endpoints[0]!.conditions, two.endpoints[2]!.conditions);
  assert.ok(Object.isFrozen(one.endpoints[1]!.conditions));
});
