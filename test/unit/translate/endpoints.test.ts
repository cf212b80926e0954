// translator.endpoints(): EndpointSlice changes that only move ready addresses are
// answered with the backends to move, and translate nothing; anything a problem or a
// route shows goes through translation, which then settles what was moved.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../../src/model/k8s.ts';
import type { ObjectChange } from '../../../src/sources/store.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, ingressClass, service, simpleIngress, slice, snapshotOf } from './fixtures.ts';

const base = (): KubeObject[] => [ingressClass('portico'), service('a'), simpleIngress('one', 'foo.example.com', [['/', 'a']])];
const changed: ObjectChange[] = [{ type: 'updated', kind: 'EndpointSlice', key: 'default/a-1' }];

describe('translator.endpoints()', () => {
  test('moved ready addresses: the backend to move, and the config stays the very same', () => {
    const t = createTranslator();
    const first = t(snapshotOf([...base(), slice('a-1', 'a', [{ ip: '10.0.0.1' }])]), OPTIONS);
    const updates = t.endpoints(snapshotOf([...base(), slice('a-1', 'a', [{ ip: '10.0.0.2' }, { ip: '10.0.0.3' }])]), OPTIONS, changed);
    assert.deepEqual(updates, [['default/a:80', [{ host: '10.0.0.2', port: 8080 }, { host: '10.0.0.3', port: 8080 }]]]);
    assert.deepEqual(t.trackedEndpoints(), updates);
    // The route still carries what it was translated with; addressesOf() tells the truth.
    assert.deepEqual(first.routes[0]!.backend.addresses, [{ host: '10.0.0.1', port: 8080 }]);
    assert.deepEqual(t.addressesOf(first.routes[0]!.backend), updates![0]![1]);
  });

  test('losing every ready endpoint is a problem: translation is needed', () => {
    const t = createTranslator();
    t(snapshotOf([...base(), slice('a-1', 'a', [{ ip: '10.0.0.1' }])]), OPTIONS);
    const emptied = snapshotOf([...base(), slice('a-1', 'a', [{ ip: '10.0.0.1', ready: false }])]);
    assert.equal(t.endpoints(emptied, OPTIONS, changed), undefined);
    const config = t(emptied, OPTIONS, changed);
    assert.deepEqual(config.problems.map((p) => p.reason), ['NoEndpoints']);
  });

  test('a translation that reads a moved backend again settles it: its routes are current', () => {
    const t = createTranslator();
    t(snapshotOf([...base(), slice('a-1', 'a', [{ ip: '10.0.0.1' }])]), OPTIONS);
    t.endpoints(snapshotOf([...base(), slice('a-1', 'a', [{ ip: '10.0.0.2' }])]), OPTIONS, changed);
    assert.deepEqual(t.takeEndpointUpdates(), []);
    // Another move, translated this time (with a Service change in the same batch).
    const now = snapshotOf([...base(), slice('a-1', 'a', [{ ip: '10.0.0.4' }])]);
    const config = t(now, OPTIONS, [...changed, { type: 'updated', kind: 'Service', key: 'default/a' }]);
    assert.deepEqual(config.routes[0]!.backend.addresses, [{ host: '10.0.0.4', port: 8080 }]);
    assert.deepEqual(t.takeEndpointUpdates(), [['default/a:80', [{ host: '10.0.0.4', port: 8080 }]]]);
    // The Ingress goes: nothing reads the backend, it is no longer followed.
    const gone = snapshotOf([ingressClass('portico'), service('a'), slice('a-1', 'a', [{ ip: '10.0.0.4' }])]);
    t(gone, OPTIONS, [{ type: 'deleted', kind: 'Ingress', key: 'default/one' }, { type: 'updated', kind: 'Service', key: 'default/a' }]);
    assert.deepEqual(t.takeEndpointUpdates(), [['default/a:80', null]]);
    assert.deepEqual(t.trackedEndpoints(), []);
  });

  test('changes of other kinds are translated', () => {
    const t = createTranslator();
    const snapshot = snapshotOf([...base(), slice('a-1', 'a', [{ ip: '10.0.0.1' }])]);
    t(snapshot, OPTIONS);
    assert.equal(t.endpoints(snapshot, OPTIONS, [{ type: 'updated', kind: 'Ingress', key: 'default/one' }]), undefined);
  });
});
