// The pod's response headers as the client gets them: buildResponseHeaders is pure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildResponseHeaders, passesAsIs, policyFitsLines } from '../../src/proxy/headers.ts';
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

test("a policy's headers follow a pod's plain lines only where they change none of them and no framing", () => {
  const lines = Buffer.from('Content-Type: text/plain\r\nX-Frame-Options: ALLOW\r\nVary: Accept-Encoding\r\nContent-Length: 5\r\n', 'latin1');
  assert.equal(policyFitsLines(lines, [['strict-transport-security', 'max-age=1']]), true, 'a name the pod does not send');
  assert.equal(policyFitsLines(lines, [['x-frame-options', 'DENY']]), false, 'replaces the pod\'s, in any case');
  assert.equal(policyFitsLines(lines, [['X-FRAME-OPTIONS', 'DENY', 'add']]), true, 'added beside the pod\'s');
  assert.equal(policyFitsLines(lines, [['x-frame-options', '', 'remove']]), false, 'removes the pod\'s');
  assert.equal(policyFitsLines(lines, [['x-other', '', 'remove']]), true, 'removes nothing the pod sent');
  assert.equal(policyFitsLines(lines, [['vary', 'Origin']]), false, 'Vary is merged with the pod\'s');
  assert.equal(policyFitsLines(lines, [['x-frame-option', 'DENY']]), true, 'a prefix of a name is another name');
  assert.equal(policyFitsLines(lines, [['content-type-x', 'a']]), true, 'and so is a longer one');
  for (const name of ['Date', 'connection', 'Content-Length', 'transfer-encoding']) assert.equal(policyFitsLines(lines, [[name, 'x', 'add']]), false, `${name} is the writer's`);
  // The same headers buildResponseHeaders gives from the pairs where the lines are taken (it lowercases names).
  const pairs = ['Content-Type', 'text/plain', 'X-Frame-Options', 'ALLOW', 'Vary', 'Accept-Encoding', 'Content-Length', '5'];
  const lower = (flat: (string | string[])[]) => flat.map((v, i) => (i % 2 === 0 ? String(v).toLowerCase() : v));
  assert.deepEqual(lower(buildResponseHeaders({}, [['strict-transport-security', 'max-age=1']], pairs)), lower([...pairs, 'strict-transport-security', 'max-age=1']));
  assert.deepEqual(lower(buildResponseHeaders({}, [['X-Frame-Options', 'DENY', 'add']], pairs)), lower([...pairs, 'X-Frame-Options', 'DENY']));
});
