// Randomized check: every implementation answers like the linear reference on
// generated tables. Small alphabets make collisions (shared prefixes, duplicates,
// trailing slashes, empty segments, wildcard overlaps) common. Seeded, so a failure
// reproduces; the seed and the failing request are in the message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MatchType } from '../../../src/model/config.ts';
import { GATEWAY_MATCHING, type RouteEntry } from '../../../src/routing/matcher.ts';
import { IMPLEMENTATIONS, REFERENCE } from './implementations.ts';

/** mulberry32: a tiny deterministic PRNG, returns [0, 1). */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ROUTE_HOSTS = ['', 'a.com', 'b.a.com', '*.a.com', '*.com', 'x.b.a.com', '*.b.a.com', 'c.org'];
const REQUEST_HOSTS = [...ROUTE_HOSTS.filter((h) => !h.startsWith('*')), 'z.a.com', 'com', 'q.com', 'y.c.org', 'unknown.net'];
const SEGMENTS = ['a', 'b', 'ab', 'A', '', 'a.b', 'b%2F'];

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function randomPath(random: () => number): string {
  const depth = Math.floor(random() * 4);
  let path = '';
  for (let i = 0; i < depth; i++) path += '/' + pick(random, SEGMENTS);
  if (path === '' || random() < 0.2) path += '/';
  return path;
}

function randomTable(random: () => number, size: number): RouteEntry<string>[] {
  const entries: RouteEntry<string>[] = [];
  for (let i = 0; i < size; i++) {
    const pathType: MatchType = random() < 0.5 ? 'Exact' : 'Prefix';
    entries.push({ host: pick(random, ROUTE_HOSTS), path: randomPath(random), pathType, value: `route-${i}` });
  }
  return entries;
}

test('every implementation agrees with the linear reference on random tables', () => {
  const seed = 20240611;
  const random = seededRandom(seed);
  const tables = 60;
  let requests = 0;
  let matched = 0;
  for (let t = 0; t < tables; t++) {
    const entries = randomTable(random, 5 + Math.floor(random() * 60));
    const reference = REFERENCE.createMatcher(entries);
    const matchers = IMPLEMENTATIONS.map((impl) => ({ name: impl.name, matcher: impl.createMatcher(entries) }));
    for (let r = 0; r < 100; r++) {
      const host = pick(random, REQUEST_HOSTS);
      const path = randomPath(random);
      const expected = reference.match(host, path);
      requests++;
      if (expected !== undefined) matched++;
      for (const { name, matcher } of matchers) {
        assert.equal(
          matcher.match(host, path),
          expected,
          `${name} vs ${REFERENCE.name} (seed ${seed}, table ${t}): host ${JSON.stringify(host)} path ${JSON.stringify(path)}\n` +
            JSON.stringify(entries),
        );
      }
    }
  }
  // The comparison only means something if both outcomes are common.
  assert.ok(matched > requests * 0.2, `only ${matched} of ${requests} requests matched`);
  assert.ok(matched < requests * 0.9, `${matched} of ${requests} requests matched`);
});

test('a matcher patched with withHosts answers like one built from the resulting entries', () => {
  const seed = 20261125;
  const random = seededRandom(seed);
  for (let t = 0; t < 40; t++) {
    const before = randomTable(random, 5 + Math.floor(random() * 40));
    // Replace the entries of a few hosts (some emptied, some new).
    const changed = new Map<string, RouteEntry<string>[]>();
    for (const host of ROUTE_HOSTS) {
      if (random() < 0.4) changed.set(host, randomTable(random, Math.floor(random() * 6)).map((e, i) => ({ ...e, host, value: `new-${t}-${i}` })));
    }
    const after = [...before.filter((e) => !changed.has(e.host)), ...[...changed.values()].flat()];
    for (const impl of IMPLEMENTATIONS) {
      const patched = impl.createMatcher(before).withHosts(changed);
      const fresh = REFERENCE.createMatcher(after);
      assert.equal(patched.size, after.length, `${impl.name}: size after withHosts (table ${t})`);
      for (let r = 0; r < 60; r++) {
        const host = pick(random, REQUEST_HOSTS);
        const path = randomPath(random);
        assert.equal(patched.match(host, path), fresh.match(host, path), `${impl.name} patched (seed ${seed}, table ${t}): host ${JSON.stringify(host)} path ${JSON.stringify(path)}`);
      }
    }
  }
});

/** Gateway API tables where some entries compete by rank alone (GRPCRoute), with every path kind. */
function randomRankedTable(random: () => number, size: number): RouteEntry<string>[] {
  const kinds: MatchType[] = ['Exact', 'Prefix', 'RegularExpression'];
  const regexes = ['/a/[^/]+', '/[^/]+/b', '/a.*', '/(ab|b)/?'];
  const entries: RouteEntry<string>[] = [];
  for (let i = 0; i < size; i++) {
    const pathType = pick(random, kinds);
    const path = pathType === 'RegularExpression' ? pick(random, regexes) : randomPath(random);
    // Few distinct ranks, so equal ranks (decided by the path order) are common too.
    const rank = String(Math.floor(random() * 6));
    entries.push({ host: pick(random, ROUTE_HOSTS), path, pathType, rank, byRank: random() < 0.7, value: `route-${i}` });
  }
  return entries;
}

test('every implementation agrees with the linear reference on Gateway tables with ranked (GRPCRoute) entries', () => {
  const seed = 20261126;
  const random = seededRandom(seed);
  let requests = 0;
  let matched = 0;
  for (let t = 0; t < 60; t++) {
    const entries = randomRankedTable(random, 3 + Math.floor(random() * 30));
    const reference = REFERENCE.createMatcher(entries, GATEWAY_MATCHING);
    const matchers = IMPLEMENTATIONS.map((impl) => ({ name: impl.name, matcher: impl.createMatcher(entries, GATEWAY_MATCHING) }));
    for (let r = 0; r < 100; r++) {
      const host = pick(random, REQUEST_HOSTS);
      const path = randomPath(random);
      const expected = reference.match(host, path);
      requests++;
      if (expected !== undefined) matched++;
      for (const { name, matcher } of matchers) {
        assert.equal(matcher.match(host, path), expected, `${name} vs ${REFERENCE.name} (seed ${seed}, table ${t}): host ${JSON.stringify(host)} path ${JSON.stringify(path)}\n${JSON.stringify(entries)}`);
      }
    }
  }
  assert.ok(matched > requests * 0.2 && matched < requests * 0.95, `${matched} of ${requests} requests matched`);
});

test('a Gateway (all-applicable) matcher patched with withHosts answers like one built from the resulting entries', () => {
  const seed = 20261127;
  const random = seededRandom(seed);
  // Ranks unique per entry, as a route's precedence key is (it names the route and rule).
  const unique = (entries: RouteEntry<string>[], tag: string) => entries.map((e, i) => ({ ...e, rank: `${e.rank} ${tag}-${i}` }));
  let compared = 0;
  for (let t = 0; t < 60; t++) {
    const before = unique(randomRankedTable(random, 3 + Math.floor(random() * 30)), `b${t}`);
    // Most tables change exact hosts only (patched in place); some a wildcard or the hostless rules (rebuilt).
    const hosts = random() < 0.7 ? ROUTE_HOSTS.filter((h) => h !== '' && !h.startsWith('*.')) : ROUTE_HOSTS;
    const changed = new Map<string, RouteEntry<string>[]>();
    for (const host of hosts) {
      if (random() < 0.4) changed.set(host, unique(randomRankedTable(random, Math.floor(random() * 5)), `n${t}-${host}`).map((e, i) => ({ ...e, host, value: `new-${t}-${host}-${i}` })));
    }
    const after = [...before.filter((e) => !changed.has(e.host)), ...[...changed.values()].flat()];
    for (const impl of IMPLEMENTATIONS) {
      const patched = impl.createMatcher(before, GATEWAY_MATCHING).withHosts(changed);
      const fresh = REFERENCE.createMatcher(after, GATEWAY_MATCHING);
      assert.equal(patched.size, after.length, `${impl.name}: size after withHosts (table ${t})`);
      for (let r = 0; r < 60; r++) {
        const host = pick(random, REQUEST_HOSTS);
        const path = randomPath(random);
        const expected = fresh.match(host, path);
        if (expected !== undefined) compared++;
        assert.equal(patched.match(host, path), expected, `${impl.name} patched (seed ${seed}, table ${t}): host ${JSON.stringify(host)} path ${JSON.stringify(path)}`);
      }
    }
  }
  assert.ok(compared > 500, `only ${compared} matching requests compared`);
});
