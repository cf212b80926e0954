// portico.dev/under-attack over real sockets: the challenge page, the solution sent back
// as a cookie, the clearance, and what is refused, over HTTP/1.1 and h2c.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Problem } from '../../src/model/config.ts';
import { parsePolicies } from '../../src/middleware/registry.ts';
import { issueClearance } from '../../src/challenge/tokens.ts';
import { registerChallengeMetrics } from '../../src/challenge/metrics.ts';
import { backend, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';
import { send } from '../support/http.ts';
import { h2Connect, h2Request } from '../support/h2.ts';
import { pageParams, solve } from '../support/challenge.ts';

const HOST = 'shop.test';

function setCookies(headers: Record<string, unknown>): string[] {
  const v = headers['set-cookie'];
  return Array.isArray(v) ? (v as string[]) : typeof v === 'string' ? [v] : [];
}

describe('under-attack challenge through the proxy', () => {
  let pod: Backend;
  let proxy: Proxy;

  before(async () => {
    pod = await startBackend('web');
    const problems: Problem[] = [];
    const policies = parsePolicies(
      { 'portico.dev/under-attack': 'true', 'portico.dev/under-attack-difficulty': '8', 'portico.dev/under-attack-ttl': '10m' },
      { kind: 'Ingress', namespace: 'default', name: 'shop' },
      problems,
    );
    assert.deepEqual(problems, []);
    const b = backend('web', [pod.port]);
    proxy = await startProxy(routing([route(HOST, '/', b, { policies }), route('other.test', '/', b, { policies }), route('calm.test', '/', b)]), { options: { h2c: true } });
    registerChallengeMetrics(proxy.registry);
  });
  after(async () => {
    await proxy?.close();
    await pod?.close();
  });

  /** Gets the challenge, solves it, sends the solution back; returns the 303 and the clearance cookie. */
  async function pass(path: string): Promise<{ location: string; cookie: string; attributes: string }> {
    const page = await send(proxy.port, { host: HOST, path });
    assert.equal(page.status, 403);
    const { nonce, bits } = pageParams(page.text);
    const answer = await send(proxy.port, { host: HOST, path, headers: { cookie: `portico_challenge=${solve(nonce, bits)}` } });
    assert.equal(answer.status, 303);
    const clearance = setCookies(answer.headers).find((c) => c.startsWith('portico_clearance='))!;
    return { location: answer.headers.location!, cookie: clearance.split(';')[0]!, attributes: clearance };
  }

  test('a request without clearance gets the challenge page, never cached, nothing reaches the pod', async () => {
    const seen = pod.seen.length;
    const r = await send(proxy.port, { host: HOST, path: '/cart?item=3' });
    assert.equal(r.status, 403);
    assert.match(String(r.headers['content-type']), /^text\/html/);
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.match(r.text, /Checking your browser/);
    assert.match(r.text, /<noscript>/);
    assert.equal(pageParams(r.text).bits, 8);
    assert.equal(pod.seen.length, seen);
  });

  test('the solution comes back as a cookie: 303 to the same path and query with an HttpOnly, SameSite=Lax clearance; then the pod answers', async () => {
    const { location, cookie, attributes } = await pass('/cart?item=3');
    assert.equal(location, '/cart?item=3');
    assert.match(attributes, /HttpOnly/);
    assert.match(attributes, /SameSite=Lax/);
    assert.match(attributes, /Max-Age=600/);
    assert.doesNotMatch(attributes, /Secure/, 'no Secure on plain HTTP');
    const r = await send(proxy.port, { host: HOST, path: location, headers: { cookie } });
    assert.equal(r.status, 200);
    assert.equal(r.json<{ path: string; query: string }>().path, '/cart');
    assert.equal(r.json<{ path: string; query: string }>().query, 'item=3');
  });

  test('with clearance a POST goes through; without it, 403 with a message that says what to do', async () => {
    const { cookie } = await pass('/');
    const ok = await send(proxy.port, { method: 'POST', host: HOST, path: '/order', headers: { cookie }, body: 'x=1' });
    assert.equal(ok.status, 200);
    assert.equal(ok.json<{ method: string }>().method, 'POST');
    const seen = pod.seen.length;
    const refused = await send(proxy.port, { method: 'POST', host: HOST, path: '/order', body: 'x=1' });
    assert.equal(refused.status, 403);
    assert.match(refused.text, /open any page of this site in a browser first/);
    assert.equal(pod.seen.length, seen);
  });

  test('forged, expired and other-host clearances get a new challenge', async () => {
    const { cookie } = await pass('/');
    const [expiry] = cookie.slice('portico_clearance='.length).split('.');
    const forged = `portico_clearance=${Number(expiry) + 3600}.${cookie.split('.')[1]}`;
    const expired = `portico_clearance=${issueClearance(HOST, Math.floor(Date.now() / 1000) - 1)}`;
    for (const c of [forged, expired, 'portico_clearance=garbage']) {
      const r = await send(proxy.port, { host: HOST, path: '/', headers: { cookie: c } });
      assert.equal(r.status, 403, c);
      assert.match(r.text, /Checking your browser/);
    }
    const elsewhere = await send(proxy.port, { host: 'other.test', path: '/', headers: { cookie } });
    assert.equal(elsewhere.status, 403, 'a clearance is for its own host');
  });

  test('a wrong solution, or one for another host, is counted as failed and challenged again', async () => {
    const page = await send(proxy.port, { host: HOST, path: '/' });
    const { nonce, bits } = pageParams(page.text);
    const wrong = await send(proxy.port, { host: HOST, path: '/', headers: { cookie: `portico_challenge=${nonce}:x` } });
    assert.equal(wrong.status, 403);
    const solved = solve(nonce, bits);
    const otherHost = await send(proxy.port, { host: 'other.test', path: '/', headers: { cookie: `portico_challenge=${solved}` } });
    assert.equal(otherHost.status, 403);
    const metrics = await proxy.registry.metrics();
    assert.match(metrics, /portico_challenges_issued_total [1-9]/);
    assert.match(metrics, /portico_challenges_solved_total [1-9]/);
    assert.match(metrics, /portico_challenges_failed_total [1-9]/);
  });

  test('routes without the annotation are unaffected', async () => {
    const r = await send(proxy.port, { host: 'calm.test', path: '/' });
    assert.equal(r.status, 200);
  });

  test('HTTP/2 (h2c) requests go through the same check', async () => {
    const { cookie } = await pass('/');
    const session = await h2Connect(proxy.port, false);
    try {
      const page = await h2Request(session, { ':path': '/h2', ':authority': HOST });
      assert.equal(page.status, 403);
      const { nonce, bits } = pageParams(page.text());
      const answer = await h2Request(session, { ':path': '/h2?q=1', ':authority': HOST, cookie: `portico_challenge=${solve(nonce, bits)}` });
      assert.equal(answer.status, 303);
      assert.equal(answer.headers.location, '/h2?q=1');
      assert.equal(setCookies(answer.headers).length, 2, 'the clearance, and the solution cookie deleted');
      const r = await h2Request(session, { ':path': '/h2', ':authority': HOST, cookie });
      assert.equal(r.status, 200);
    } finally {
      session.close();
    }
  });

  test('a flood of bad solutions is answered without holding up other traffic', async () => {
    const page = await send(proxy.port, { host: HOST, path: '/' });
    const { nonce } = pageParams(page.text);
    const flood = Array.from({ length: 300 }, (_, i) => send(proxy.port, { host: HOST, path: '/', headers: { cookie: `portico_challenge=${nonce}:${i}` } }));
    const calm = await send(proxy.port, { host: 'calm.test', path: '/' });
    assert.equal(calm.status, 200);
    const answers = await Promise.all(flood);
    // Each is refused (a new page) or, by luck, solved (303); none errs or reaches the pod.
    for (const a of answers) assert.ok(a.status === 403 || a.status === 303, String(a.status));
  });
});
