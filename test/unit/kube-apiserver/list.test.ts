// Lists: namespaces and scope, selectors, chunking with consistent continue tokens, and
// resourceVersion semantics.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NetworkingV1Api } from '@kubernetes/client-node';
import { FakeKubeApiServer } from '../../support/kube-apiserver/index.ts';
import { apiError, ingress, kubeConfigFor, raw } from './helpers.ts';

const LIST = '/apis/networking.k8s.io/v1/namespaces/paging/ingresses';

describe('test API server: lists', () => {
  let server: FakeKubeApiServer;
  let net: NetworkingV1Api;

  before(async () => {
    server = await FakeKubeApiServer.start();
    net = kubeConfigFor(server).makeApiClient(NetworkingV1Api);
    for (let i = 0; i < 7; i++) server.apply(ingress(`ing-${i}`, { namespace: 'paging', labels: { tier: i % 2 ? 'odd' : 'even', idx: String(i) } }));
    server.apply(ingress('elsewhere', { namespace: 'other', labels: { tier: 'odd' } }));
  });
  after(() => server.stop());

  test('per namespace and across all namespaces, with list metadata and no kind on items', async () => {
    const inNs = await net.listNamespacedIngress({ namespace: 'paging' });
    assert.equal(inNs.items.length, 7);
    const all = await net.listIngressForAllNamespaces({});
    assert.equal(all.items.length, 8);
    assert.equal(all.metadata?.resourceVersion, server.resourceVersion);
    const body = (await raw(server, 'GET', '/apis/networking.k8s.io/v1/ingresses')).json();
    assert.equal(body.kind, 'IngressList');
    assert.equal(body.items[0].kind, undefined, 'list items carry no kind, as on the wire');
  });

  test('label selectors: =, ==, !=, in, notin, exists, !exists', async () => {
    const names = async (labelSelector: string) => (await net.listIngressForAllNamespaces({ labelSelector })).items.map((i) => i.metadata!.name).sort();
    assert.deepEqual(await names('tier=odd'), ['elsewhere', 'ing-1', 'ing-3', 'ing-5']);
    assert.deepEqual(await names('tier==even,idx!=0'), ['ing-2', 'ing-4', 'ing-6']);
    assert.deepEqual(await names('idx in (1, 2)'), ['ing-1', 'ing-2']);
    assert.deepEqual(await names('tier=odd,idx notin (1,3)'), ['elsewhere', 'ing-5']);
    assert.deepEqual(await names('tier,!idx'), ['elsewhere']);
    assert.deepEqual(await names('idx!=3,idx'), ['ing-0', 'ing-1', 'ing-2', 'ing-4', 'ing-5', 'ing-6']);
    await assert.rejects(net.listIngressForAllNamespaces({ labelSelector: 'tier in odd' }), apiError(400, 'BadRequest'));
  });

  test('field selectors on metadata.name and metadata.namespace', async () => {
    const byName = await net.listIngressForAllNamespaces({ fieldSelector: 'metadata.name=ing-3' });
    assert.deepEqual(byName.items.map((i) => i.metadata?.name), ['ing-3']);
    const notPaging = await net.listIngressForAllNamespaces({ fieldSelector: 'metadata.namespace!=paging' });
    assert.deepEqual(notPaging.items.map((i) => i.metadata?.name), ['elsewhere']);
  });

  test('limit/continue pages through a consistent snapshot', async () => {
    const seen: string[] = [];
    let page = await net.listNamespacedIngress({ namespace: 'paging', limit: 3 });
    const listRv = page.metadata!.resourceVersion;
    assert.equal(page.metadata?.remainingItemCount, 4);
    seen.push(...page.items.map((i) => i.metadata!.name!));
    // Changes after the first page do not show up in later pages.
    server.apply(ingress('ing-9', { namespace: 'paging' }));
    server.remove('Ingress', 'paging', 'ing-5');
    while (page.metadata?._continue) {
      page = await net.listNamespacedIngress({ namespace: 'paging', limit: 3, _continue: page.metadata._continue });
      assert.equal(page.metadata?.resourceVersion, listRv);
      seen.push(...page.items.map((i) => i.metadata!.name!));
    }
    assert.deepEqual(seen, ['ing-0', 'ing-1', 'ing-2', 'ing-3', 'ing-4', 'ing-5', 'ing-6']);
    const fresh = await net.listNamespacedIngress({ namespace: 'paging' });
    assert.deepEqual(fresh.items.map((i) => i.metadata!.name), ['ing-0', 'ing-1', 'ing-2', 'ing-3', 'ing-4', 'ing-6', 'ing-9']);
    server.apply(ingress('ing-5', { namespace: 'paging', labels: { tier: 'odd', idx: '5' } }));
    server.remove('Ingress', 'paging', 'ing-9');
  });

  test('pages with a selector fill up to the limit with matching items', async () => {
    const first = await net.listNamespacedIngress({ namespace: 'paging', labelSelector: 'tier=odd', limit: 2 });
    assert.deepEqual(first.items.map((i) => i.metadata!.name), ['ing-1', 'ing-3']);
    const second = await net.listNamespacedIngress({ namespace: 'paging', labelSelector: 'tier=odd', limit: 2, _continue: first.metadata!._continue });
    assert.deepEqual(second.items.map((i) => i.metadata!.name), ['ing-5']);
    assert.equal(second.metadata?._continue, undefined);
  });

  test('an expired continue token is 410 Expired; a bad one is 400', async () => {
    const first = (await raw(server, 'GET', `${LIST}?limit=2`)).json();
    server.apply(ingress('bump', { namespace: 'paging' }));
    server.compact();
    const expired = await raw(server, 'GET', `${LIST}?limit=2&continue=${encodeURIComponent(first.metadata.continue)}`);
    assert.equal(expired.status, 410);
    assert.deepEqual([expired.json().reason, expired.json().code], ['Expired', 410]);
    assert.equal((await raw(server, 'GET', `${LIST}?limit=2&continue=garbage`)).status, 400);
    server.remove('Ingress', 'paging', 'bump');
  });

  test('resourceVersion semantics: "0" and "" are current, Exact reads the past, too large is 504', async () => {
    const before = (await raw(server, 'GET', LIST)).json();
    server.apply(ingress('later', { namespace: 'paging' }));
    const zero = (await raw(server, 'GET', `${LIST}?resourceVersion=0`)).json();
    assert.equal(zero.items.length, before.items.length + 1);
    assert.equal(zero.metadata.resourceVersion, server.resourceVersion);
    const exact = (await raw(server, 'GET', `${LIST}?resourceVersion=${before.metadata.resourceVersion}&resourceVersionMatch=Exact`)).json();
    assert.equal(exact.items.length, before.items.length);
    assert.equal(exact.metadata.resourceVersion, before.metadata.resourceVersion);
    const notOlder = (await raw(server, 'GET', `${LIST}?resourceVersion=${before.metadata.resourceVersion}&resourceVersionMatch=NotOlderThan`)).json();
    assert.equal(notOlder.items.length, before.items.length + 1);
    const tooLarge = await raw(server, 'GET', `${LIST}?resourceVersion=${Number(server.resourceVersion) + 100}`);
    assert.equal(tooLarge.status, 504);
    assert.equal(tooLarge.json().details.causes[0].reason, 'ResourceVersionTooLarge');
    server.compact();
    const compacted = await raw(server, 'GET', `${LIST}?resourceVersion=${before.metadata.resourceVersion}&resourceVersionMatch=Exact`);
    assert.equal(compacted.status, 410);
    server.remove('Ingress', 'paging', 'later');
  });
});
