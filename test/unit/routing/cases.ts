// The one table of routing cases every Matcher implementation must pass
// (run by matchers.test.ts). Values name the backend a user would reach;
// expect: undefined means "no rule matches" (the proxy then uses the default backend).
import type { MatchType, RouteConditions, ValueMatch } from '../../../src/model/config.ts';
import { GATEWAY_MATCHING, type MatcherOptions } from '../../../src/routing/matcher.ts';

export interface CaseRoute {
  host: string;
  path: string;
  pathType: MatchType;
  value: string;
  conditions?: RouteConditions;
  rank?: string;
  byRank?: boolean;
}

export interface CaseRequest {
  host: string;
  path: string;
  method?: string;
  /** Flat [name, value, ...] as received */
  rawHeaders?: string[];
  /** "?a=b" or "" */
  query?: string;
  expect: string | undefined;
}

export interface MatcherCase {
  name: string;
  /** Default: Ingress matching. */
  options?: MatcherOptions;
  routes: CaseRoute[];
  requests: CaseRequest[];
}

const prefix = (path: string, value: string, host = ''): CaseRoute => ({ host, path, pathType: 'Prefix', value });
const exact = (path: string, value: string, host = ''): CaseRoute => ({ host, path, pathType: 'Exact', value });
/** A request to any host; hostless routes serve it. */
const get = (path: string, expect: string | undefined, host = 'example.com'): CaseRequest => ({ host, path, expect });
const at = (host: string, path: string, expect: string | undefined): CaseRequest => ({ host, path, expect });

/** Every row of the "Examples" table under "Path types" in the Kubernetes Ingress docs. */
const KUBERNETES_DOCS_EXAMPLES: MatcherCase[] = [
  {
    name: 'docs: Prefix / matches all paths',
    routes: [prefix('/', 'root')],
    requests: [get('/', 'root'), get('/foo', 'root'), get('/foo/', 'root'), get('/aaa/bbb/ccc', 'root'), get('//', 'root')],
  },
  {
    name: 'docs: Exact /foo matches /foo only',
    routes: [exact('/foo', 'foo')],
    requests: [get('/foo', 'foo'), get('/bar', undefined), get('/foo/', undefined)],
  },
  {
    name: 'docs: Exact /foo/ does not match /foo',
    routes: [exact('/foo/', 'foo-slash')],
    requests: [get('/foo', undefined), get('/foo/', 'foo-slash')],
  },
  {
    name: 'docs: Prefix /foo matches /foo and /foo/',
    routes: [prefix('/foo', 'foo')],
    requests: [get('/foo', 'foo'), get('/foo/', 'foo')],
  },
  {
    name: 'docs: Prefix /foo/ matches /foo and /foo/',
    routes: [prefix('/foo/', 'foo-slash')],
    requests: [get('/foo', 'foo-slash'), get('/foo/', 'foo-slash')],
  },
  {
    name: 'docs: Prefix /aaa/bb does not match /aaa/bbb',
    routes: [prefix('/aaa/bb', 'bb')],
    requests: [get('/aaa/bbb', undefined)],
  },
  {
    name: 'docs: Prefix /aaa/bbb matches /aaa/bbb',
    routes: [prefix('/aaa/bbb', 'bbb')],
    requests: [get('/aaa/bbb', 'bbb')],
  },
  {
    name: 'docs: Prefix /aaa/bbb/ matches /aaa/bbb (ignores trailing slash)',
    routes: [prefix('/aaa/bbb/', 'bbb-slash')],
    requests: [get('/aaa/bbb', 'bbb-slash')],
  },
  {
    name: 'docs: Prefix /aaa/bbb matches /aaa/bbb/ and /aaa/bbb/ccc, not /aaa/bbbxyz',
    routes: [prefix('/aaa/bbb', 'bbb')],
    requests: [get('/aaa/bbb/', 'bbb'), get('/aaa/bbb/ccc', 'bbb'), get('/aaa/bbbxyz', undefined)],
  },
  {
    name: 'docs: Prefix /, /aaa with /aaa/ccc matches /aaa',
    routes: [prefix('/', 'root'), prefix('/aaa', 'aaa')],
    requests: [get('/aaa/ccc', 'aaa')],
  },
  {
    name: 'docs: Prefix /, /aaa, /aaa/bbb',
    routes: [prefix('/', 'root'), prefix('/aaa', 'aaa'), prefix('/aaa/bbb', 'bbb')],
    requests: [get('/aaa/bbb', 'bbb'), get('/ccc', 'root')],
  },
  {
    name: 'docs: Prefix /aaa does not match /ccc (default backend)',
    routes: [prefix('/aaa', 'aaa')],
    requests: [get('/ccc', undefined)],
  },
  {
    name: 'docs: mixed Prefix /foo and Exact /foo prefer Exact',
    routes: [prefix('/foo', 'foo-prefix'), exact('/foo', 'foo-exact')],
    requests: [get('/foo', 'foo-exact'), get('/foo/', 'foo-prefix'), get('/foo/x', 'foo-prefix')],
  },
  {
    name: 'docs: mixed, listed Exact first, still prefer Exact',
    routes: [exact('/foo', 'foo-exact'), prefix('/foo', 'foo-prefix')],
    requests: [get('/foo', 'foo-exact'), get('/foo/', 'foo-prefix')],
  },
];

/** kubernetes-sigs/ingress-controller-conformance: features/path_rules.feature and host_rules.feature. */
const CONFORMANCE: MatcherCase[] = [
  {
    name: 'conformance: path rules',
    routes: [
      exact('/foo', 'foo-exact', 'exact-path-rules'),
      prefix('/foo', 'foo-prefix', 'prefix-path-rules'),
      prefix('/aaa/bbb', 'aaa-slash-bbb-prefix', 'prefix-path-rules'),
      prefix('/aaa', 'aaa-prefix', 'prefix-path-rules'),
      prefix('/foo', 'foo-prefix', 'mixed-path-rules'),
      exact('/foo', 'foo-exact', 'mixed-path-rules'),
      prefix('/aaa/bbb/', 'aaa-slash-bbb-slash-prefix', 'trailing-slash-path-rules'),
      exact('/foo/', 'foo-slash-exact', 'trailing-slash-path-rules'),
    ],
    requests: [
      at('exact-path-rules', '/foo', 'foo-exact'),
      at('exact-path-rules', '/foo/', undefined),
      at('exact-path-rules', '/FOO', undefined),
      at('exact-path-rules', '/bar', undefined),
      at('prefix-path-rules', '/foo', 'foo-prefix'),
      at('prefix-path-rules', '/foo/', 'foo-prefix'),
      at('prefix-path-rules', '/FOO', undefined),
      at('prefix-path-rules', '/aaa/bbb', 'aaa-slash-bbb-prefix'),
      at('prefix-path-rules', '/aaa/bbb/ccc', 'aaa-slash-bbb-prefix'),
      at('prefix-path-rules', '/aaa/ccc', 'aaa-prefix'),
      at('prefix-path-rules', '/aaaccc', undefined),
      at('mixed-path-rules', '/foo', 'foo-exact'),
      at('trailing-slash-path-rules', '/aaa/bbb', 'aaa-slash-bbb-slash-prefix'),
      at('trailing-slash-path-rules', '/aaa/bbb/', 'aaa-slash-bbb-slash-prefix'),
      at('trailing-slash-path-rules', '/foo', undefined),
      at('trailing-slash-path-rules', '/foo/', 'foo-slash-exact'),
    ],
  },
  {
    name: 'conformance: host rules with a wildcard',
    routes: [prefix('/', 'wildcard-foo-com', '*.foo.com'), prefix('/', 'foo-bar-com', 'foo.bar.com')],
    requests: [
      at('foo.bar.com', '/', 'foo-bar-com'),
      at('subdomain.bar.com', '/', undefined),
      at('bar.foo.com', '/', 'wildcard-foo-com'),
      at('baz.bar.foo.com', '/', undefined),
      at('foo.com', '/', undefined),
    ],
  },
];

const HOSTS: MatcherCase[] = [
  {
    name: 'hosts: an exact host beats a wildcard covering it',
    routes: [prefix('/', 'wildcard', '*.foo.com'), prefix('/', 'bar', 'bar.foo.com')],
    requests: [at('bar.foo.com', '/', 'bar'), at('baz.foo.com', '/x', 'wildcard')],
  },
  {
    name: 'hosts: rules without host catch every other host',
    routes: [prefix('/', 'a', 'a.com'), prefix('/', 'catch-all'), prefix('/', 'wildcard', '*.b.com')],
    requests: [
      at('a.com', '/', 'a'),
      at('b.com', '/', 'catch-all'),
      at('x.b.com', '/', 'wildcard'),
      at('y.x.b.com', '/', 'catch-all'),
      at('', '/', 'catch-all'),
      at('127.0.0.1', '/', 'catch-all'),
    ],
  },
  {
    name: 'hosts: no fall-through from an exact host to the rules without host',
    routes: [prefix('/api', 'a-api', 'a.com'), prefix('/', 'catch-all')],
    requests: [at('a.com', '/api/x', 'a-api'), at('a.com', '/other', undefined), at('b.com', '/other', 'catch-all')],
  },
  {
    name: 'hosts: no fall-through from a wildcard to the rules without host',
    routes: [prefix('/api', 'wild-api', '*.foo.com'), prefix('/', 'catch-all')],
    requests: [at('x.foo.com', '/api', 'wild-api'), at('x.foo.com', '/other', undefined), at('foo.com', '/other', 'catch-all')],
  },
  {
    name: 'hosts: no fall-through from an exact host to its wildcard',
    routes: [exact('/api', 'bar-api', 'bar.foo.com'), prefix('/', 'wildcard', '*.foo.com')],
    requests: [at('bar.foo.com', '/api', 'bar-api'), at('bar.foo.com', '/x', undefined), at('baz.foo.com', '/x', 'wildcard')],
  },
  {
    name: 'hosts: a wildcard covers exactly one non-empty label',
    routes: [prefix('/', 'star-com', '*.com')],
    requests: [at('foo.com', '/', 'star-com'), at('a.foo.com', '/', undefined), at('com', '/', undefined), at('.com', '/', undefined)],
  },
  {
    name: 'hosts: no rules at all',
    routes: [],
    requests: [at('a.com', '/', undefined), at('', '/', undefined)],
  },
  {
    name: 'hosts: only host rules, request without host',
    routes: [prefix('/', 'a', 'a.com'), prefix('/', 'wildcard', '*.a.com')],
    requests: [at('', '/', undefined), at('b.com', '/', undefined)],
  },
];

const PATHS: MatcherCase[] = [
  {
    name: 'paths: case-sensitive',
    routes: [prefix('/Foo', 'Foo'), exact('/bar', 'bar')],
    requests: [get('/Foo', 'Foo'), get('/Foo/x', 'Foo'), get('/foo', undefined), get('/FOO/x', undefined), get('/BAR', undefined), get('/bar', 'bar')],
  },
  {
    name: 'paths: empty segments under a Prefix',
    routes: [prefix('/foo', 'foo'), prefix('/foo/bar', 'foo-bar')],
    requests: [
      get('/foo//bar', 'foo'),
      get('/foo/bar', 'foo-bar'),
      get('/foo/bar//', 'foo-bar'),
      get('/foo//', 'foo'),
      get('//foo', undefined),
    ],
  },
  {
    name: 'paths: root Prefix / and Exact /',
    routes: [exact('/', 'root-exact'), prefix('/', 'root-prefix')],
    requests: [get('/', 'root-exact'), get('/a', 'root-prefix'), get('//', 'root-prefix')],
  },
  {
    name: 'paths: Exact / alone matches only /',
    routes: [exact('/', 'root-exact')],
    requests: [get('/', 'root-exact'), get('/a', undefined), get('//', undefined)],
  },
  {
    name: 'paths: the longest match wins across types',
    routes: [exact('/foo', 'foo-exact'), prefix('/foo/bar', 'foo-bar'), prefix('/', 'root'), exact('/foo/bar/baz', 'baz-exact')],
    requests: [
      get('/foo', 'foo-exact'),
      get('/foo/bar', 'foo-bar'),
      get('/foo/bar/baz', 'baz-exact'),
      get('/foo/bar/baz/', 'foo-bar'),
      get('/foo/baz', 'root'),
    ],
  },
  {
    name: 'paths: Exact with trailing slash beats the Prefix of the same name',
    routes: [prefix('/foo', 'foo-prefix'), exact('/foo/', 'foo-slash-exact')],
    requests: [get('/foo/', 'foo-slash-exact'), get('/foo', 'foo-prefix'), get('/foo//', 'foo-prefix')],
  },
  {
    name: 'paths: duplicates keep the first entry',
    routes: [prefix('/foo', 'first'), prefix('/foo/', 'second'), exact('/x', 'x-first'), exact('/x', 'x-second')],
    requests: [get('/foo', 'first'), get('/foo/a', 'first'), get('/x', 'x-first')],
  },
  {
    name: 'paths: deep requests under a short prefix',
    routes: [prefix('/a', 'a'), prefix('/ab', 'ab')],
    requests: [
      get('/a/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb/c/d/e/f', 'a'),
      get('/abcdefghijklmnopqrstuvwxyz/x', undefined),
      get('/ab/cdefghijklmnopqrstuvwxyz', 'ab'),
      get('/a//', 'a'),
      get('/abc', undefined),
    ],
  },
  {
    name: 'paths: dots and percent signs are plain characters to the matcher',
    routes: [prefix('/v1.2', 'v1.2'), exact('/a%2Fb', 'encoded')],
    requests: [get('/v1.2/x', 'v1.2'), get('/v1x2', undefined), get('/a%2Fb', 'encoded'), get('/a/b', undefined)],
  },
  {
    name: 'paths: only paths starting with / can match',
    routes: [prefix('/', 'root')],
    requests: [get('*', undefined), get('', undefined), get('foo', undefined)],
  },
];

const when = (conditions: Partial<RouteConditions>): RouteConditions => ({ headers: [], query: [], ...conditions });
const exactValue = (name: string, value: string): ValueMatch => ({ name, type: 'Exact', value });
const regexValue = (name: string, value: string): ValueMatch => ({ name, type: 'RegularExpression', value });
const regex = (path: string, value: string, host = ''): CaseRoute => ({ host, path, pathType: 'RegularExpression', value });
const with_ = (route: CaseRoute, extra: Partial<CaseRoute>): CaseRoute => ({ ...route, ...extra });
const req = (path: string, expect: string | undefined, extra: Partial<CaseRequest> = {}): CaseRequest => ({ host: 'example.com', path, expect, ...extra });

/**
 * Gateway API: the precedence the HTTPRoute spec orders (Exact, longest Prefix, method,
 * most headers, most query parameters, then route age, name and rule order — which
 * translation turns into `rank`), conditions, RegularExpression paths and wildcards.
 */
const GATEWAY: MatcherCase[] = [
  {
    name: 'gateway: a method match beats none on the same path; other methods fall back',
    options: GATEWAY_MATCHING,
    routes: [with_(prefix('/', 'any'), { rank: '1' }), with_(prefix('/', 'get-only'), { conditions: when({ method: 'GET' }), rank: '0' })],
    requests: [req('/x', 'get-only', { method: 'GET' }), req('/x', 'any', { method: 'POST' })],
  },
  {
    name: 'gateway: the longest Prefix beats conditions on a shorter one',
    options: GATEWAY_MATCHING,
    routes: [with_(prefix('/', 'header'), { conditions: when({ headers: [exactValue('version', 'two')] }) }), prefix('/v2', 'v2')],
    requests: [
      req('/v2/x', 'v2', { rawHeaders: ['Version', 'two'] }),
      req('/x', 'header', { rawHeaders: ['version', 'two'] }),
      req('/x', undefined, { rawHeaders: ['version', 'one'] }),
    ],
  },
  {
    name: 'gateway: conditions that do not hold fall through to a shorter Prefix',
    options: GATEWAY_MATCHING,
    routes: [with_(prefix('/a', 'a-with-header'), { conditions: when({ headers: [exactValue('x', '1')] }) }), prefix('/', 'root')],
    requests: [req('/a/b', 'a-with-header', { rawHeaders: ['X', '1'] }), req('/a/b', 'root'), req('/a', 'root', { rawHeaders: ['x', '2'] })],
  },
  {
    name: 'gateway: more header matches first (ranked), each must hold',
    options: GATEWAY_MATCHING,
    routes: [
      with_(prefix('/', 'version'), { conditions: when({ headers: [exactValue('version', 'two')] }), rank: '1' }),
      with_(prefix('/', 'version-color'), { conditions: when({ headers: [exactValue('version', 'two'), exactValue('color', 'orange')] }), rank: '0' }),
    ],
    requests: [
      req('/', 'version-color', { rawHeaders: ['version', 'two', 'color', 'orange'] }),
      req('/', 'version', { rawHeaders: ['version', 'two', 'color', 'blue'] }),
      req('/', undefined, { rawHeaders: ['color', 'orange'] }),
    ],
  },
  {
    name: 'gateway: query parameters (case-sensitive names, first value) and regular expressions on headers',
    options: GATEWAY_MATCHING,
    routes: [
      with_(prefix('/', 'animal'), { conditions: when({ query: [exactValue('animal', 'whale')] }), rank: '0' }),
      with_(prefix('/', 'regex-header'), { conditions: when({ headers: [regexValue('x-id', '[0-9]+')] }), rank: '1' }),
    ],
    requests: [
      req('/', 'animal', { query: '?animal=whale' }),
      req('/', 'animal', { query: '?color=blue&animal=whale&animal=dolphin' }),
      req('/', undefined, { query: '?Animal=whale' }),
      req('/', undefined, { query: '?animal=dolphin&animal=whale' }),
      req('/', 'regex-header', { rawHeaders: ['X-Id', '123'] }),
      req('/', undefined, { rawHeaders: ['X-Id', '12a'] }),
    ],
  },
  {
    name: 'gateway: RegularExpression paths come after Exact and before Prefix, and match the whole path',
    options: GATEWAY_MATCHING,
    routes: [regex('/v[0-9]+/.*', 're'), exact('/v1/x', 'exact'), prefix('/v1', 'prefix')],
    requests: [req('/v1/x', 'exact'), req('/v1/y', 're'), req('/v1', 'prefix'), req('/v12/y', 're'), req('/a/v1/y', undefined)],
  },
  {
    name: 'gateway: same match, the lower rank (older route, then name, then rule order) wins',
    options: GATEWAY_MATCHING,
    routes: [with_(exact('/same', 'newer'), { rank: '7' }), with_(exact('/same', 'older'), { rank: '2' })],
    requests: [req('/same', 'older')],
  },
  {
    // Upstream conformance HTTPRouteMatchingAcrossRoutes: a longer path on a wildcard route beats "/" on the exact host.
    name: 'gateway: every route whose hostname covers the request competes, path first',
    options: GATEWAY_MATCHING,
    routes: [
      with_(prefix('/', 'v1', 'example.com'), { rank: '2' }),
      with_(prefix('/', 'v1', 'example.net'), { rank: '3' }),
      with_(prefix('/v2', 'v2', '*.com'), { rank: '4' }),
      with_(prefix('/', 'any-v2', '*.com'), { conditions: when({ headers: [exactValue('version', 'two')] }), rank: '0' }),
    ],
    requests: [
      at('example.com', '/', 'v1'),
      at('example.com', '/v2', 'v2'),
      at('example.net', '/v2', 'v1'),
      at('example.com', '/v2/example', 'v2'),
      req('/', 'any-v2', { rawHeaders: ['version', 'two'] }),
      at('other.org', '/', undefined),
    ],
  },
  {
    name: 'gateway: a wildcard covers one or more labels; the longest suffix wins',
    options: GATEWAY_MATCHING,
    routes: [prefix('/', 'wild', '*.example.com'), prefix('/', 'wild-b', '*.b.example.com'), prefix('/', 'exact', 'x.b.example.com')],
    requests: [
      at('a.example.com', '/', 'wild'),
      at('a.c.example.com', '/', 'wild'),
      at('a.b.example.com', '/', 'wild-b'),
      at('deep.a.b.example.com', '/', 'wild-b'),
      at('x.b.example.com', '/', 'exact'),
      at('example.com', '/', undefined),
    ],
  },
];

/** A GRPCRoute rule: its rank alone orders it (hostname, service, method, headers first). */
const ranked = (route: CaseRoute, rank: string, extra: Partial<CaseRoute> = {}): CaseRoute => ({ ...route, rank, byRank: true, ...extra });

/**
 * GRPCRoute: translation turns a method match into a path (Exact "/svc/method", Prefix
 * "/svc/", RegularExpression "/[^/]+/method") and its precedence into the rank; the
 * rank, not the path kind, decides (byRank).
 */
const GRPC: MatcherCase[] = [
  {
    name: 'grpc: more characters of service first: a service-only Prefix beats a method-only RegularExpression',
    options: GATEWAY_MATCHING,
    routes: [ranked(regex('/[^/]+/Get', 'method-only'), '2'), ranked(prefix('/a.B/', 'service-only'), '1'), ranked(prefix('/', 'any'), '3')],
    requests: [req('/a.B/Get', 'service-only'), req('/c.D/Get', 'method-only'), req('/c.D/Put', 'any'), req('/a.B/Put', 'service-only')],
  },
  {
    name: 'grpc: the hostname comes first: "/" on the exact host beats service and method on a wildcard',
    options: GATEWAY_MATCHING,
    routes: [ranked(exact('/a.B/Get', 'wild-exact', '*.example.com'), '2'), ranked(prefix('/', 'host-any', 'x.example.com'), '1')],
    requests: [at('x.example.com', '/a.B/Get', 'host-any'), at('y.example.com', '/a.B/Get', 'wild-exact'), at('y.example.com', '/a.B/Put', undefined)],
  },
  {
    name: 'grpc: a rule whose headers do not hold gives way to the next rank, whatever its path kind',
    options: GATEWAY_MATCHING,
    routes: [
      ranked(exact('/a.B/Get', 'canary'), '0', { conditions: when({ headers: [exactValue('x-track', 'canary')] }) }),
      ranked(regex('/a\\.B/.*', 'regex'), '1'),
      ranked(exact('/a.B/Get', 'exact'), '2'),
    ],
    requests: [req('/a.B/Get', 'canary', { rawHeaders: ['x-track', 'canary'] }), req('/a.B/Get', 'regex'), req('/a.B/Put', 'regex')],
  },
  {
    name: 'grpc: on equal ranks the path order decides (Exact, RegularExpression, the longer Prefix)',
    options: GATEWAY_MATCHING,
    routes: [ranked(prefix('/a', 'short'), '1'), ranked(prefix('/a/b', 'long'), '1'), ranked(regex('/a/b/.*', 'regex'), '1'), ranked(exact('/a/b/c', 'exact'), '1')],
    requests: [req('/a/b/c', 'exact'), req('/a/b/d', 'regex'), req('/a/b', 'long'), req('/a/x', 'short')],
  },
  {
    name: 'grpc: ranked rules are tried before the others of their hosts',
    options: GATEWAY_MATCHING,
    routes: [exact('/a.B/Get', 'unranked-exact'), ranked(prefix('/', 'ranked-any'), '9', { host: 'x.com' })],
    requests: [at('x.com', '/a.B/Get', 'ranked-any'), at('y.com', '/a.B/Get', 'unranked-exact')],
  },
];

export const MATCHER_CASES: readonly MatcherCase[] = [...KUBERNETES_DOCS_EXAMPLES, ...CONFORMANCE, ...HOSTS, ...PATHS, ...GATEWAY, ...GRPC];
