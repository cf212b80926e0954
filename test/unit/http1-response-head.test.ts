// src/http1/response-head.ts reads a pod's plain response heads in JavaScript and leaves
// every other head to llhttp. Its promise: whatever it accepts, llhttp (Node's own
// parser, through the same binding the client uses) accepts too and reads to the same
// status, reason, headers, length and keep-alive. Checked here on a table of heads and on
// thousands of one-byte mutations of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fieldPairs, keepAliveHint, plainFields, plainHead, plainReason, readPlainHead } from '../../src/http1/response-head.ts';
import { HTTPParser, kOnHeaders, kOnHeadersComplete, LENIENT_NONE, RESPONSE } from '../../src/http1/parser.ts';

interface LlhttpHead {
  status: number;
  reason: string;
  pairs: string[];
  keepAlive: boolean;
  versionMinor: number;
}

/** What llhttp makes of `bytes` as a response head (a string: its error). */
function llhttpHead(bytes: Buffer): LlhttpHead | string {
  const parser = new HTTPParser();
  parser.initialize(RESPONSE, {}, 0, LENIENT_NONE);
  let head: LlhttpHead | undefined;
  const pending: string[] = [];
  parser[kOnHeaders] = (headers: string[]) => pending.push(...headers);
  parser[kOnHeadersComplete] = (_major: number, minor: number, headers: string[] | undefined, _m: number, _u: unknown, status: number, reason: string, _up: boolean, keepAlive: boolean) => {
    head = { status, reason, pairs: headers ?? pending, keepAlive, versionMinor: minor };
    return 1; // no body: only the head is compared
  };
  const result = parser.execute(bytes);
  parser.close();
  if (typeof result !== 'number') return `${result.code}`;
  return head ?? 'incomplete';
}

function contentLengths(pairs: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i]!.toLowerCase() === 'content-length') out.push(pairs[i + 1]!);
  return out;
}

/** Checks the promise for one input; returns whether it was read as plain. */
function agrees(bytes: Buffer, what: string): boolean {
  if (!readPlainHead(bytes, bytes.length)) return false;
  const h = { ...plainHead };
  const llhttp = llhttpHead(bytes.subarray(0, h.length));
  if (typeof llhttp === 'string') assert.fail(`${what}: read as plain, but llhttp refuses it (${llhttp}): ${JSON.stringify(bytes.toString('latin1'))}`);
  assert.equal(h.status, llhttp.status, `${what}: status`);
  assert.equal(plainReason(bytes), llhttp.reason, `${what}: reason`);
  assert.equal(llhttp.versionMinor, 1, `${what}: HTTP/1.1`);
  assert.equal(llhttp.keepAlive, true, `${what}: keep-alive`);
  const lengths = contentLengths(llhttp.pairs);
  assert.equal(lengths.length, 1, `${what}: one Content-Length`);
  assert.equal(h.contentLength, Number(lengths[0]), `${what}: Content-Length`);
  // The pairs llhttp gives, but the Connection and Keep-Alive lines that are left out.
  const expected: string[] = [];
  const keepAlive: string[] = [];
  for (let i = 0; i < llhttp.pairs.length; i += 2) {
    const name = llhttp.pairs[i]!.toLowerCase();
    if (name === 'keep-alive') keepAlive.push(llhttp.pairs[i + 1]!);
    if (name === 'connection' || name === 'keep-alive') continue;
    expected.push(llhttp.pairs[i]!, llhttp.pairs[i + 1]!);
  }
  assert.ok(keepAlive.length <= 1, `${what}: one Keep-Alive at most`);
  assert.equal(h.keepAliveMs, keepAlive.length === 0 ? -1 : keepAliveHint(keepAlive[0]!), `${what}: Keep-Alive timeout`);
  assert.deepEqual(fieldPairs(plainFields(bytes)), expected, `${what}: headers`);
  // llhttp reads exactly this head: fed one byte less, it has not finished it.
  assert.equal(llhttpHead(bytes.subarray(0, h.length - 1)), 'incomplete', `${what}: head length`);
  return true;
}

const head = (text: string) => Buffer.from(text, 'latin1');

const PLAIN = [
  'HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 29 Nov 2026 21:28:19 GMT\r\nContent-Type: text/plain\r\nContent-Length: 30\r\nConnection: keep-alive\r\n\r\n',
  'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n',
  'HTTP/1.1 404 Not Found\r\nX-Mixed-Case: yes\r\nConnection: Keep-Alive\r\nContent-Length:5\r\n\r\nhello',
  'HTTP/1.1 503 \r\nContent-Length: 12 \r\nX-Empty:\r\nX-Tab:\tvalue\twith tabs\t\r\n\r\n',
  'HTTP/1.1 299 Some  odd\treason caf\xe9\r\nX-Latin: caf\xe9\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 3\r\n\r\n',
  'HTTP/1.1 500 Internal Server Error\r\nContent-Length: 999999999999999\r\n__proto__: p\r\nconstructor: c\r\n\r\n',
  // What node:http sends by default, and Tomcat.
  'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: Sun, 29 Nov 2026 21:28:19 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok',
  'HTTP/1.1 200 \r\nKeep-Alive: TimeOut=20, max=100\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n',
  'HTTP/1.1 200 OK\r\nKeep-Alive: max=100\r\nX-A: b\r\nContent-Length: 1\r\n\r\n',
];

test('plain heads are read as llhttp reads them', () => {
  for (const text of PLAIN) assert.equal(agrees(head(text), text), true, `plain: ${JSON.stringify(text)}`);
  const nginx = head(PLAIN[0]!);
  readPlainHead(nginx, nginx.length);
  assert.equal(plainHead.hasDate, true);
  assert.equal(plainHead.length, nginx.length);
  assert.equal(
    plainFields(nginx).toString('latin1'),
    'Server: nginx/1.22.1\r\nDate: Sun, 29 Nov 2026 21:28:19 GMT\r\nContent-Type: text/plain\r\nContent-Length: 30\r\n',
    'the lines as the pod wrote them, without Connection: keep-alive',
  );
  const middle = head(PLAIN[2]!);
  readPlainHead(middle, middle.length);
  assert.equal(plainHead.hasDate, false);
  assert.equal(plainFields(middle).toString('latin1'), 'X-Mixed-Case: yes\r\nContent-Length:5\r\n', 'a Connection line in the middle is cut out');
  assert.equal(plainHead.length, middle.length - 5, 'the body starts after the blank line');
  const node = head(PLAIN[6]!);
  readPlainHead(node, node.length);
  assert.equal(plainHead.keepAliveMs, 5000);
  assert.equal(
    plainFields(node).toString('latin1'),
    'Content-Type: text/plain\r\nDate: Sun, 29 Nov 2026 21:28:19 GMT\r\nContent-Length: 2\r\n',
    'Connection and Keep-Alive cut out',
  );
  const tomcat = head(PLAIN[7]!);
  readPlainHead(tomcat, tomcat.length);
  assert.equal(plainHead.keepAliveMs, 20_000);
  assert.equal(plainFields(tomcat).toString('latin1'), 'Content-Length: 0\r\n', 'Keep-Alive before Connection, both cut out');
});

test('heads that are not plain are left to llhttp, whatever llhttp makes of them', () => {
  const notPlain: [string, string][] = [
    ['chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'],
    ['a length and chunked', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n'],
    ['no length (a body to the close)', 'HTTP/1.1 200 OK\r\nX-A: b\r\n\r\n'],
    ['two lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n'],
    ['a length list', 'HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n'],
    ['a signed length', 'HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n'],
    ['a 16-digit length', 'HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456\r\n\r\n'],
    ['Connection: close', 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\n'],
    ['Connection naming a header', 'HTTP/1.1 200 OK\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\nContent-Length: 5\r\n\r\n'],
    ['two Connection lines', 'HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\n'],
    ['two Keep-Alive lines', 'HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nKeep-Alive: timeout=9\r\nContent-Length: 5\r\n\r\n'],
    ['Upgrade', 'HTTP/1.1 200 OK\r\nUpgrade: h2c\r\nContent-Length: 5\r\n\r\n'],
    ['Trailer', 'HTTP/1.1 200 OK\r\nTrailer: x\r\nContent-Length: 5\r\n\r\n'],
    ['TE', 'HTTP/1.1 200 OK\r\nTE: trailers\r\nContent-Length: 5\r\n\r\n'],
    ['Proxy-Connection', 'HTTP/1.1 200 OK\r\nProxy-Connection: keep-alive\r\nContent-Length: 5\r\n\r\n'],
    ['HTTP/1.0', 'HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n'],
    ['a 1xx', 'HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n'],
    ['204', 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n'],
    ['304', 'HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n'],
    ['a status of 600', 'HTTP/1.1 600 X\r\nContent-Length: 5\r\n\r\n'],
    ['no reason, no space', 'HTTP/1.1 200\r\nContent-Length: 5\r\n\r\n'],
    ['leading blank line', '\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n'],
    ['obs-fold', 'HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 5\r\n\r\n'],
    ['bare LF', 'HTTP/1.1 200 OK\nContent-Length: 5\n\n'],
    ['bare LF in a value', 'HTTP/1.1 200 OK\r\nX-A: a\nb\r\nContent-Length: 5\r\n\r\n'],
    ['bare CR in a value', 'HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 5\r\n\r\n'],
    ['NUL in a value', 'HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 5\r\n\r\n'],
    ['DEL in a value', 'HTTP/1.1 200 OK\r\nX-A: a\x7fb\r\nContent-Length: 5\r\n\r\n'],
    ['space before the colon', 'HTTP/1.1 200 OK\r\nX-A : b\r\nContent-Length: 5\r\n\r\n'],
    ['an empty name', 'HTTP/1.1 200 OK\r\n: b\r\nContent-Length: 5\r\n\r\n'],
    ['a name with "@"', 'HTTP/1.1 200 OK\r\nX@A: b\r\nContent-Length: 5\r\n\r\n'],
    ['a line without a colon', 'HTTP/1.1 200 OK\r\nX-A\r\nContent-Length: 5\r\n\r\n'],
    ['not all there', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n'],
    ['longer than 8 KiB', `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(8200)}\r\nContent-Length: 5\r\n\r\n`],
  ];
  for (const [what, text] of notPlain) assert.equal(readPlainHead(head(text), text.length), false, what);
});

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('one-byte mutations of plain heads: what is still read as plain, llhttp reads the same', () => {
  // Bytes that matter to a head's grammar, and some that do not.
  const bytes = [0x0d, 0x0a, 0x20, 0x09, 0x3a, 0x2c, 0x00, 0x7f, 0x80, 0xff, 0x30, 0x35, 0x41, 0x61, 0x2d, 0x3b, 0x22, 0x40];
  const next = random(12_345);
  let plain = 0;
  let runs = 0;
  for (const text of PLAIN) {
    const base = head(text);
    for (let n = 0; n < 1_500; n++) {
      const at = Math.floor(next() * base.length);
      const byte = bytes[Math.floor(next() * bytes.length)]!;
      const kind = Math.floor(next() * 3);
      let mutated: Buffer;
      if (kind === 0) {
        mutated = Buffer.from(base);
        mutated[at] = byte;
      } else if (kind === 1) {
        mutated = Buffer.concat([base.subarray(0, at), Buffer.of(byte), base.subarray(at)]);
      } else {
        mutated = Buffer.concat([base.subarray(0, at), base.subarray(at + 1)]);
      }
      runs++;
      if (agrees(mutated, `mutation ${kind} of byte ${at} to ${byte} in ${JSON.stringify(text)}`)) plain++;
    }
  }
  // Many mutations keep a head plain (a byte of a value changed), many break it.
  assert.ok(plain > runs / 10 && plain < runs, `${plain} of ${runs} mutations still plain`);
});
