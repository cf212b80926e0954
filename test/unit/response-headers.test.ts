// The pod's response headers as the client gets them: buildResponseHeaders is pure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildResponseHeaders, passesAsIs } from '../../src/proxy/headers.ts';
import { isNamed } from '../../src/http1/header-chars.ts';

/** Flat [name, value, ...] to name -> values, for order-free comparison. */
function byName(flat: (string | string[])[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i] as string] = flat[i + 1]!;
  return out;
}

test('hop-by-hop headers and those named by Connection are removed; the rest pass as they are', () => {
  const out = byName(
    buildResponseHeaders(
      { 'content-type': 'text/plain', connection: 'keep-alive, x-private', 'keep-alive': 'timeout=5', 'transfer-encoding': 'chunked', 'x-private': '1', 'set-cookie': ['a=1', 'b=2'], trailer: 'x-sum' },
      undefined,
    ),
  );
  assert.deepEqual(out, { 'content-type': 'text/plain', 'set-cookie': ['a=1', 'b=2'] });
});

test("a policy's header replaces the pod's of the same name", () => {
  const out = byName(buildResponseHeaders({ 'x-frame-options': 'ALLOW', server: 'pod' }, [['X-Frame-Options', 'DENY']]));
  assert.deepEqual(out, { server: 'pod', 'X-Frame-Options': 'DENY' });
});

test("a policy's Vary adds to the pod's Vary instead of replacing it", () => {
  assert.deepEqual(byName(buildResponseHeaders({ vary: 'Accept-Encoding' }, [['vary', 'Origin']])), { vary: 'Accept-Encoding, Origin' });
  const repeated: Record<string, string | string[]> = { vary: ['Accept-Encoding', 'origin'] };
  assert.deepEqual(byName(buildResponseHeaders(repeated, [['vary', 'Origin']])), { vary: 'Accept-Encoding, origin' }, 'no token twice');
  assert.deepEqual(byName(buildResponseHeaders({ vary: '*' }, [['vary', 'Origin']])), { vary: '*' }, '"*" already covers everything');
  assert.deepEqual(byName(buildResponseHeaders({}, [['vary', 'Origin']])), { vary: 'Origin' }, 'no Vary from the pod');
});

test("a pod's head passes as it is only with nothing hop-by-hop in it but Transfer-Encoding and Connection: keep-alive", () => {
  assert.equal(passesAsIs(['Content-Type', 'text/plain', 'Connection', 'keep-alive', 'Transfer-Encoding', 'chunked', 'Set-Cookie', 'a=1']), true);
  assert.equal(passesAsIs(['Content-Type', 'text/plain', 'Connection', 'Keep-Alive']), true, 'keep-alive in any case');
  assert.equal(passesAsIs([]), true);
  // Each of these must be dropped or acted on, which buildResponseHeaders does.
  for (const [name, value] of [
    ['Connection', 'close'],
    ['connection', 'keep-alive, x-private'],
    ['Keep-Alive', 'timeout=5'],
    ['TE', 'trailers'],
    ['Upgrade', 'h2c'],
    ['Trailer', 'x-sum'],
    ['Proxy-Connection', 'keep-alive'],
  ] as const) {
    assert.equal(passesAsIs(['Content-Type', 'text/plain', name, value]), false, `${name}: ${value}`);
  }
});

test('isNamed compares a header name with a lowercase one in any case, letters only folded', () => {
  assert.equal(isNamed('Content-Length', 'content-length'), true);
  assert.equal(isNamed('CONTENT-LENGTH', 'content-length'), true);
  assert.equal(isNamed('content-length', 'content-length'), true);
  assert.equal(isNamed('Content-Lengthx', 'content-length'), false);
  assert.equal(isNamed('Content_Length', 'content-length'), false);
  // "\r" | 0x20 is "-", so folding anything but A-Z would take one for the other.
  assert.equal(isNamed('date\r', 'date-'), false);
  assert.equal(isNamed('Dat\u00c5', 'date'), false);
});
