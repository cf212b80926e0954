// Runs every Matcher implementation over the shared table of cases.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { IMPLEMENTATIONS } from './implementations.ts';
import { MATCHER_CASES } from './cases.ts';

for (const { name, createMatcher } of IMPLEMENTATIONS) {
  describe(`${name} matcher`, () => {
    for (const matcherCase of MATCHER_CASES) {
      test(matcherCase.name, () => {
        const matcher = createMatcher(matcherCase.routes, matcherCase.options);
        assert.equal(matcher.size, matcherCase.routes.length);
        for (const request of matcherCase.requests) {
          const facts = { method: request.method ?? 'GET', rawHeaders: request.rawHeaders ?? [] };
          assert.equal(
            matcher.match(request.host, request.path, facts, request.query ?? ''),
            request.expect,
            `host ${JSON.stringify(request.host)} path ${JSON.stringify(request.path)} ${request.method ?? ''} ${JSON.stringify(request.rawHeaders ?? [])} ${request.query ?? ''}`,
          );
        }
      });
    }

    test('does not depend on the entries array after it is built', () => {
      const routes = [{ host: 'a.com', path: '/', pathType: 'Prefix' as const, value: 'a' }];
      const matcher = createMatcher(routes);
      routes.length = 0;
      assert.equal(matcher.match('a.com', '/x'), 'a');
    });
  });
}

test('the table covers every kind of case', () => {
  assert.ok(MATCHER_CASES.length >= 30);
  const requests = MATCHER_CASES.flatMap((c) => c.requests);
  assert.ok(requests.some((r) => r.expect === undefined));
  assert.ok(requests.some((r) => r.expect !== undefined));
});
