// lowerName (src/http1/header-names.ts): the lowercase of any header name, whether it is
// one of the common names returned as constants or not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerName } from '../../src/http1/header-names.ts';

test('lowerName gives the lowercase name, for common names in the usual, lower and other cases, and for others', () => {
  const names = ['Host', 'Date', 'Vary', 'ETag', 'Accept', 'Server', 'Cookie', 'Origin', 'Referer', 'Connection', 'User-Agent', 'Keep-Alive', 'Set-Cookie', 'Content-Type', 'Cache-Control', 'Authorization', 'Last-Modified', 'Accept-Ranges', 'If-None-Match', 'Content-Length', 'Accept-Encoding', 'Accept-Language', 'X-Forwarded-For', 'Content-Encoding', 'Transfer-Encoding'];
  for (const name of names) {
    const lower = name.toLowerCase();
    for (const form of [name, lower, name.toUpperCase(), `${name[0]!.toLowerCase()}${name.slice(1).toUpperCase()}`]) {
      assert.equal(lowerName(form), lower, form);
    }
  }
  for (const other of ['X-Custom', 'x-custom', 'WWW-Authenticate', 'Hosts', 'Hos', 'A']) assert.equal(lowerName(other), other.toLowerCase(), other);
});
