import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createAccessLogger, createLogger, type AccessLogEntry } from '../../../src/util/log.ts';

/** A destination that keeps each written line. */
function capture(): { lines: string[]; write(chunk: string): void } {
  const lines: string[] = [];
  return {
    lines,
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line !== '') lines.push(line);
    },
  };
}

const entry = {
  method: 'GET',
  host: 'shop.example.com',
  path: '/cart',
  status: 200,
  bytes: 512,
  durationMs: 3.5,
  upstreamMs: 2.25,
  upstream: '10.0.0.1:8080',
  route: 'shop/web|shop.example.com|Prefix|/',
  clientIp: '192.0.2.7',
  requestId: 'abc123',
  error: undefined,
};

describe('logging', () => {
  test('writes one JSON object per line with level name, time and message', () => {
    const out = capture();
    const log = createLogger('info', out);
    log.info({ routes: 3 }, 'route table rebuilt');
    log.warn('second');
    assert.equal(out.lines.length, 2);
    const first = JSON.parse(out.lines[0]!);
    assert.equal(first.level, 'info');
    assert.equal(first.msg, 'route table rebuilt');
    assert.equal(first.routes, 3);
    assert.ok(!Number.isNaN(Date.parse(first.time)), `time is an ISO date: ${first.time}`);
    assert.equal(JSON.parse(out.lines[1]!).level, 'warn');
  });

  test('drops events below the level', () => {
    const out = capture();
    const log = createLogger('warn', out);
    log.info('hidden');
    log.debug('hidden');
    log.error('shown');
    assert.deepEqual(out.lines.map((l) => JSON.parse(l).msg), ['shown']);
  });

  test('rejects an unknown level with the valid ones in the message', () => {
    assert.throws(() => createLogger('verbose'), /unknown log level "verbose".*debug/);
  });

  test('the access logger writes an info line per request with every field', () => {
    const out = capture();
    const access = createAccessLogger(createLogger('info', out));
    access(entry);
    access({ ...entry, status: 503, upstream: undefined, upstreamMs: undefined, route: undefined, requestId: undefined });
    assert.equal(out.lines.length, 2);
    const line = JSON.parse(out.lines[0]!);
    assert.equal(line.msg, 'access');
    assert.equal(line.kind, 'access');
    assert.equal(line.level, 'info');
    for (const [key, value] of Object.entries(entry)) assert.deepEqual(line[key], value, key);
    const noPod = JSON.parse(out.lines[1]!);
    assert.equal(noPod.status, 503);
    for (const key of ['upstream', 'upstreamMs', 'route', 'requestId']) assert.ok(!(key in noPod), `${key} left out when it does not apply`);
  });

  test("an access line's time is the clock's, read once per millisecond of the finishedAt the proxy read", () => {
    const out = capture();
    const access = createAccessLogger(createLogger('info', out));
    const before = Date.now();
    access({ ...entry, finishedAt: performance.now() });
    access({ ...entry, finishedAt: undefined });
    const after = Date.now();
    // Later lines in the same millisecond of finishedAt reuse its time, which may then be 1 ms behind.
    const start = performance.now();
    // The clock around the last line: read just before its finishedAt and just after it is
    // written (a process descheduled in between would otherwise fail a tighter bound).
    let lastBefore = before;
    let last = before;
    while (performance.now() - start < 20) {
      lastBefore = Date.now();
      access({ ...entry, finishedAt: performance.now() });
      last = Date.now();
    }
    const lines = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const times = lines.map((l) => Date.parse(l.time as string));
    assert.ok(times[0]! >= before && times[0]! <= after, `time ${times[0]} within [${before}, ${after}]`);
    assert.ok(times[1]! >= before && times[1]! <= after, `without finishedAt, the time now: ${times[1]}`);
    const later = times.slice(2);
    assert.ok(new Set(later).size >= 10, `20 ms of lines carry the passing milliseconds (${new Set(later).size} distinct)`);
    assert.ok(later.every((t, i) => t >= (later[i - 1] ?? before)), 'times do not go back');
    assert.ok(later.at(-1)! >= lastBefore - 1 && later.at(-1)! <= last, `the last line's time ${later.at(-1)} within 1 ms of the clock's [${lastBefore}, ${last}]`);
    for (const line of lines) assert.ok(!('finishedAt' in line), 'finishedAt is not a field of the line');
  });

  test('each access line is exactly the JSON of its fields in a fixed order, whatever the values', () => {
    const out = capture();
    const access = createAccessLogger(createLogger('info', out));
    const texts = ['GET', 'shop.example.com', '/a b', 'caf\u00e9', 'quote"back\\slash', 'tab\tnew\nline', '\u0001', '\ud83d\ude00', '\ud800', '', '/p?q=1&r=2'];
    const millis = [0, 0.001, 0.01, 0.1, 1, 1.5, 1.234, 2.25, 10.05, 999.999, 1234567.891, 0.30000000000000004, 1e-7, 123456789012.345, 5e15 + 0.5];
    const pick = <T>(list: readonly T[], i: number, salt: number): T => list[(i * 7 + salt * 13 + ((i * salt) >> 2)) % list.length]!;
    const entries: AccessLogEntry[] = [];
    for (let i = 0; i < 300; i++) {
      const optional = <T>(value: T, bit: number): T | undefined => ((i >> bit) & 1 ? undefined : value);
      entries.push({
        method: pick(['GET', 'POST', 'M-SEARCH'], i, 1),
        host: pick(texts, i, 2),
        path: pick(texts, i, 3),
        status: pick([200, 404, 499, 503], i, 4),
        bytes: pick([0, 13, 1048576, 2 ** 40], i, 5),
        durationMs: pick(millis, i, 6),
        upstreamMs: optional(pick(millis, i, 7), 0),
        upstream: optional(pick(['10.0.0.1:8080', '[fd00::1]:80'], i, 8), 1),
        route: optional(pick(texts, i, 9), 2),
        clientIp: pick(['192.0.2.7', '2001:db8::1', texts[4]!], i, 10),
        requestId: optional(pick(texts, i, 11), 3),
        error: optional(pick(texts, i, 12), 4),
      });
    }
    for (const e of entries) access(e);
    assert.equal(out.lines.length, entries.length);
    out.lines.forEach((text, i) => {
      const e = entries[i]!;
      const time = (JSON.parse(text) as { time: string }).time;
      const expected = JSON.stringify({
        level: 'info', time, pid: process.pid, kind: 'access', method: e.method, host: e.host, path: e.path, status: e.status, bytes: e.bytes,
        durationMs: e.durationMs, upstreamMs: e.upstreamMs, upstream: e.upstream, route: e.route, clientIp: e.clientIp, requestId: e.requestId, error: e.error, msg: 'access',
      });
      assert.equal(text, expected);
    });
  });

  test('the access log is silent when the level is above info', () => {
    const out = capture();
    createAccessLogger(createLogger('error', out))(entry);
    assert.deepEqual(out.lines, []);
  });
});
