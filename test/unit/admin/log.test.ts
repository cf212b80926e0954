import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createAccessLogger, createLogger } from '../../../src/util/log.ts';

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

  test('the access log is silent when the level is above info', () => {
    const out = capture();
    createAccessLogger(createLogger('error', out))(entry);
    assert.deepEqual(out.lines, []);
  });
});
