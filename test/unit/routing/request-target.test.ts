import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hasDotSegment, isValidHost, normalizeHost, normalizePath, splitTarget, withoutPathParameters } from '../../../src/routing/request-target.ts';

describe('normalizeHost', () => {
  const cases: [input: string | undefined, expected: string][] = [
    [undefined, ''],
    ['', ''],
    ['foo.com', 'foo.com'],
    ['Foo.COM', 'foo.com'],
    ['foo.com:8080', 'foo.com'],
    ['FOO.com:443', 'foo.com'],
    ['foo.com.', 'foo.com'],
    ['foo.com.:8080', 'foo.com'],
    ['foo.com..', 'foo.com.'],
    ['127.0.0.1', '127.0.0.1'],
    ['127.0.0.1:80', '127.0.0.1'],
    ['[::1]', '[::1]'],
    ['[::1]:8080', '[::1]'],
    ['[FE80::1]:443', '[fe80::1]'],
    ['localhost', 'localhost'],
  ];
  for (const [input, expected] of cases) {
    test(`${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => {
      assert.equal(normalizeHost(input), expected);
    });
  }

  test('returns an already normal host unchanged (the same string)', () => {
    const host = 'api.example.com';
    assert.equal(normalizeHost(host), host);
  });
});

describe('splitTarget', () => {
  const cases: [url: string, expected: { path: string; query: string; authority: string } | undefined][] = [
    ['/', { path: '/', query: '', authority: '' }],
    ['/a/b', { path: '/a/b', query: '', authority: '' }],
    ['/a/b?x=1', { path: '/a/b', query: '?x=1', authority: '' }],
    ['/a?', { path: '/a', query: '?', authority: '' }],
    ['/a?x=1?y=2', { path: '/a', query: '?x=1?y=2', authority: '' }],
    ['//double/slash', { path: '//double/slash', query: '', authority: '' }],
    ['/a%2Fb?q=%3F', { path: '/a%2Fb', query: '?q=%3F', authority: '' }],
    ['http://host:8080/a?x', { path: '/a', query: '?x', authority: 'host:8080' }],
    ['http://host/a/b', { path: '/a/b', query: '', authority: 'host' }],
    ['HTTPS://Host/a', { path: '/a', query: '', authority: 'Host' }],
    ['https://[::1]:8443/p?q', { path: '/p', query: '?q', authority: '[::1]:8443' }],
    ['http://host', { path: '/', query: '', authority: 'host' }],
    ['http://host?x=1', { path: '/', query: '?x=1', authority: 'host' }],
    ['*', { path: '*', query: '', authority: '' }],
    ['', undefined],
    ['host:443', undefined],
    ['example.com/a', undefined],
    ['ftp://host/a', undefined],
    ['http:///a', undefined],
    ['http:/a', undefined],
    ['http://user:pass@host/a', undefined],
    ['http://evil.com@good.com/', undefined],
    ['a/b', undefined],
    ['**', undefined],
  ];
  for (const [url, expected] of cases) {
    test(`${JSON.stringify(url)}`, () => {
      const target = splitTarget(url);
      assert.deepEqual(target === undefined ? undefined : { path: target.path, query: target.query, authority: target.authority }, expected);
    });
  }
});

describe('hasDotSegment', () => {
  const refused = [
    '/.',
    '/..',
    '/./',
    '/../',
    '/public/../admin',
    '/public/./admin',
    '/public/..',
    '/a/%2e%2e/b',
    '/a/%2E%2E/b',
    '/a/%2e/b',
    '/a/.%2e/b',
    '/a/%2E./b',
    '/public/..%2fadmin',
    '/public/..%2Fadmin',
    '/public%2f..%2fadmin',
    '/public\\..\\admin',
    '/public/..%5cadmin',
    '/public/..;/admin',
    '/public/..;jsessionid=1/admin',
    '/public/.;/admin',
  ];
  const allowed = [
    '/',
    '',
    '/public/admin',
    '/a.b/c',
    '/.well-known/acme-challenge/x',
    '/...',
    '/a/.../b',
    '/a..b',
    '/file.',
    '/..a',
    '/a/%2e%2e%2e',
    '/%2ex',
    '/100%',
    '/a%2',
    '/a%',
    '/v1.2/items',
    '/a;b/c',
    '/;/x',
    '/...;/x',
  ];
  for (const path of refused) {
    test(`refuses ${JSON.stringify(path)}`, () => assert.equal(hasDotSegment(path), true));
  }
  for (const path of allowed) {
    test(`allows ${JSON.stringify(path)}`, () => assert.equal(hasDotSegment(path), false));
  }
});

describe('normalizePath', () => {
  const cases: [string, string | undefined][] = [
    ['/', '/'],
    ['/app/x', '/app/x'],
    ['/%61pp', '/app'],
    ['/%41%5a%7e%2D%2e%5F', '/AZ~-._'],
    ['//app///x//', '/app/x/'],
    ['/a%3f%2a%c3%a9', '/a%3F%2A%C3%A9'],
    ['/a%252F', '/a%252F'],
    ['/%2f', undefined],
    ['/a%2Fb', undefined],
    ['/a%5cb', undefined],
    ['/a\\b', undefined],
    ['/a%00', undefined],
    ['/a%0a', undefined],
    ['/a%7f', undefined],
    ['/a%', undefined],
    ['/a%4', undefined],
    ['/a%g0', undefined],
    ['/UPPER/Case', '/UPPER/Case'],
  ];
  for (const [input, expected] of cases) {
    test(`${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => assert.equal(normalizePath(input), expected));
  }
  test('a path with nothing to change is returned as is', () => {
    const path = '/already/normal;x=1';
    assert.equal(normalizePath(path), path);
  });
});

describe('withoutPathParameters', () => {
  const cases: [string, string][] = [
    ['/app', '/app'],
    ['/app;jsessionid=1', '/app'],
    ['/app;x/admin;y=2/z', '/app/admin/z'],
    ['/;x/app', '/app'],
  ];
  for (const [input, expected] of cases) {
    test(`${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => assert.equal(withoutPathParameters(input), expected));
  }
});

describe('isValidHost', () => {
  for (const host of ['echo.test', 'ECHO.test.', 'echo.test:8080', 'echo.test:', '10.0.0.1:80', '[::1]', '[::1]:8443', '[::ffff:10.0.0.1]', 'under_score.test', '']) {
    test(`accepts ${JSON.stringify(host)}`, () => assert.equal(isValidHost(host), true));
  }
  for (const host of ['echo.test:@evil.com', 'echo.test:80x', 'echo.test:80:81', 'a b', 'echo.test/x', '[::1', '[zz::1]', '[::1]x', ':80', 'user@echo.test', 'echo.tést']) {
    test(`refuses ${JSON.stringify(host)}`, () => assert.equal(isValidHost(host), false));
  }
});
