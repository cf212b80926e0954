// Gateway API conformance, ported: the HTTPRoute and Gateway scenarios of
// kubernetes-sigs/gateway-api conformance/tests that apply to what portico serves,
// run through the real CLI in standalone mode against echo pods that report their
// Service and namespace (as upstream's echo-basic does). Each scenario keeps its
// upstream name; like the upstream suite, its manifests are applied, its cases retried
// until they hold (eventual consistency), then its manifests are removed.
//
// Adaptations, because portico binds each Gateway listener port itself on loopback
// (upstream gives each Gateway its own address on port 80): every Gateway listens on
// its own free port, and a scenario's requests go to its Gateway's port. The scenarios
// run twice: in standalone mode (status read from /routes) and in cluster mode against
// the test API server (objects created through the API, status read back from it as
// the leader wrote it).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { startEchoServer, type EchoReply } from '../../examples/echo-server.ts';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, serviceWithEndpoints, type Obj } from '../support/objects.ts';
import { freePort, gatewayClass, httpRoute } from '../support/gateway-objects.ts';
import { send } from '../support/http.ts';

const INFRA = 'gateway-conformance-infra';
const APP = 'gateway-conformance-app-backend';
const WEB = 'gateway-conformance-web-backend';

interface Case {
  host?: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  /** Expected answer: a backend (Service name) in a namespace, or a status without backend. */
  backend?: string;
  namespace?: string;
  status?: number;
  /** What the pod must have received, when a filter changed it. */
  seen?: { path?: string; host?: string; headers?: Record<string, string | undefined> };
  /** Expected response headers. */
  responseHeaders?: Record<string, string | undefined>;
  /** Over 100 requests: how many each backend gets, as [at least, at most]. */
  distribution?: Record<string, [number, number]>;
}

interface Scenario {
  name: string;
  /** Which Gateway the cases go to: a base one, or one the scenario defines. */
  gateway: string;
  manifests: (ports: Ports) => Obj[];
  cases: Case[];
  /** Route -> expected conditions of its first parent ("Type=Status:Reason"). */
  routeStatus?: Record<string, string[]>;
  /** Gateway "ns/name" -> listener name -> attachedRoutes. */
  attached?: Record<string, Record<string, number>>;
}

type Ports = Record<string, number>;

const to = (name: string, port = 8080, extra: Obj = {}) => ({ name, port, ...extra });
const route = (name: string, spec: Obj) => httpRoute(name, spec, INFRA);
const sameNs = [{ name: 'same-namespace' }];

function gatewayWith(name: string, port: number, listeners: Obj[]): Obj {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: INFRA },
    spec: { gatewayClassName: 'portico', listeners: listeners.map((l) => ({ port, protocol: 'HTTP', ...l })) },
  };
}

const SCENARIOS: Scenario[] = [
  {
    name: 'HTTPRouteSimpleSameNamespace',
    gateway: 'same-namespace',
    manifests: () => [route('gateway-conformance-infra-test', { parentRefs: sameNs, rules: [{ backendRefs: [to('infra-backend-v1')] }] })],
    cases: [{ path: '/', backend: 'infra-backend-v1', namespace: INFRA }],
    routeStatus: { 'gateway-conformance-infra-test': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'HTTPRouteMatchingAcrossRoutes',
    gateway: 'same-namespace',
    manifests: () => [
      route('matching-part1', {
        parentRefs: sameNs,
        hostnames: ['example.com', 'example.net'],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }, { headers: [{ name: 'version', value: 'one' }] }], backendRefs: [to('infra-backend-v1')] }],
      }),
      route('matching-part2', {
        parentRefs: sameNs,
        hostnames: ['*.com'],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/v2' } }, { headers: [{ name: 'version', value: 'two' }] }], backendRefs: [to('infra-backend-v2')] }],
      }),
    ],
    cases: [
      { host: 'example.com', path: '/', backend: 'infra-backend-v1' },
      { host: 'example.com', path: '/example', backend: 'infra-backend-v1' },
      { host: 'example.net', path: '/example', backend: 'infra-backend-v1' },
      { host: 'example.com', path: '/example', headers: { Version: 'one' }, backend: 'infra-backend-v1' },
      { host: 'example.com', path: '/v2', backend: 'infra-backend-v2' },
      { host: 'example.net', path: '/v2', backend: 'infra-backend-v1' },
      { host: 'example.com', path: '/v2/example', backend: 'infra-backend-v2' },
      { host: 'example.com', path: '/', headers: { Version: 'two' }, backend: 'infra-backend-v2' },
    ],
  },
  {
    name: 'HTTPRouteHostnameIntersection',
    gateway: 'httproute-hostname-intersection',
    manifests: (p) => [
      gatewayWith('httproute-hostname-intersection', p.intersection!, [
        { name: 'listener-1', hostname: 'very.specific.com' },
        { name: 'listener-2', hostname: '*.wildcard.io' },
        { name: 'listener-3', hostname: '*.anotherwildcard.io' },
      ]),
      ...(
        [
          ['specific-host-matches-listener-specific-host', ['non.matching.com', '*.nonmatchingwildcard.io', 'very.specific.com'], '/s1', 'infra-backend-v1'],
          ['specific-host-matches-listener-wildcard-host', ['non.matching.com', 'wildcard.io', 'foo.wildcard.io', 'bar.wildcard.io', 'foo.bar.wildcard.io'], '/s2', 'infra-backend-v2'],
          ['wildcard-host-matches-listener-specific-host', ['non.matching.com', '*.specific.com'], '/s3', 'infra-backend-v3'],
          ['wildcard-host-matches-listener-wildcard-host', ['*.anotherwildcard.io'], '/s4', 'infra-backend-v1'],
          ['no-intersecting-hosts', ['specific.but.wrong.com', 'wildcard.io'], '/s5', 'infra-backend-v2'],
        ] as const
      ).map(([name, hostnames, path, backend]) =>
        route(name, {
          parentRefs: [{ name: 'httproute-hostname-intersection', namespace: INFRA }],
          hostnames: [...hostnames],
          rules: [{ matches: [{ path: { type: 'PathPrefix', value: path } }], backendRefs: [to(backend)] }],
        }),
      ),
    ],
    cases: [
      { host: 'very.specific.com', path: '/s1', backend: 'infra-backend-v1' },
      { host: 'very.specific.com:1234', path: '/s1', backend: 'infra-backend-v1' },
      { host: 'non.matching.com', path: '/s1', status: 404 },
      { host: 'foo.nonmatchingwildcard.io', path: '/s1', status: 404 },
      { host: 'foo.wildcard.io', path: '/s1', status: 404 },
      { host: 'very.specific.com', path: '/non-matching-prefix', status: 404 },
      { host: 'foo.wildcard.io', path: '/s2', backend: 'infra-backend-v2' },
      { host: 'bar.wildcard.io', path: '/s2', backend: 'infra-backend-v2' },
      { host: 'foo.bar.wildcard.io', path: '/s2', backend: 'infra-backend-v2' },
      { host: 'non.matching.com', path: '/s2', status: 404 },
      { host: 'wildcard.io', path: '/s2', status: 404 },
      { host: 'very.specific.com', path: '/s2', status: 404 },
      { host: 'very.specific.com', path: '/s3', backend: 'infra-backend-v3' },
      { host: 'foo.specific.com', path: '/s3', status: 404 },
      { host: 'foo.wildcard.io', path: '/s3', status: 404 },
      { host: 'foo.anotherwildcard.io', path: '/s4', backend: 'infra-backend-v1' },
      { host: 'foo.bar.anotherwildcard.io', path: '/s4', backend: 'infra-backend-v1' },
      { host: 'anotherwildcard.io', path: '/s4', status: 404 },
      { host: 'very.specific.com', path: '/s4', status: 404 },
      { host: 'specific.but.wrong.com', path: '/s5', status: 404 },
      { host: 'wildcard.io', path: '/s5', status: 404 },
    ],
    routeStatus: { 'no-intersecting-hosts': ['Accepted=False:NoMatchingListenerHostname', 'ResolvedRefs=True:ResolvedRefs'] },
    attached: { [`${INFRA}/httproute-hostname-intersection`]: { 'listener-1': 2, 'listener-2': 1, 'listener-3': 1 } },
  },
  {
    name: 'HTTPRouteListenerHostnameMatching',
    gateway: 'httproute-listener-hostname-matching',
    manifests: (p) => [
      gatewayWith('httproute-listener-hostname-matching', p.listenerHostnames!, [
        { name: 'listener-1', hostname: 'bar.com' },
        { name: 'listener-2', hostname: 'foo.bar.com' },
        { name: 'listener-3', hostname: '*.bar.com' },
        { name: 'listener-4', hostname: '*.foo.com' },
      ]),
      ...([['backend-v1', 'listener-1', 'infra-backend-v1'], ['backend-v2', 'listener-2', 'infra-backend-v2'], ['backend-v3', 'listener-3', 'infra-backend-v3'], ['backend-v3-foo', 'listener-4', 'infra-backend-v3']] as const).map(
        ([name, section, backend]) => route(name, { parentRefs: [{ name: 'httproute-listener-hostname-matching', namespace: INFRA, sectionName: section }], rules: [{ backendRefs: [to(backend)] }] }),
      ),
    ],
    cases: [
      { host: 'bar.com', path: '/', backend: 'infra-backend-v1' },
      { host: 'foo.bar.com', path: '/', backend: 'infra-backend-v2' },
      { host: 'baz.bar.com', path: '/', backend: 'infra-backend-v3' },
      { host: 'boo.bar.com', path: '/', backend: 'infra-backend-v3' },
      { host: 'multiple.prefixes.bar.com', path: '/', backend: 'infra-backend-v3' },
      { host: 'multiple.prefixes.foo.com', path: '/', backend: 'infra-backend-v3' },
      { host: 'foo.com', path: '/', status: 404 },
      { host: 'no.matching.host', path: '/', status: 404 },
    ],
  },
  {
    name: 'HTTPRouteQueryParamMatching',
    gateway: 'same-namespace',
    manifests: () => {
      const q = (name: string, value: string) => ({ name, value });
      const h = (name: string, value: string) => ({ name, value });
      const prefix = (value: string) => ({ type: 'PathPrefix', value });
      return [
        route('query-param-matching', {
          parentRefs: sameNs,
          rules: [
            { matches: [{ queryParams: [q('animal', 'whale')] }], backendRefs: [to('infra-backend-v1')] },
            { matches: [{ queryParams: [q('animal', 'dolphin')] }], backendRefs: [to('infra-backend-v2')] },
            { matches: [{ queryParams: [q('animal', 'dolphin'), q('color', 'blue')] }, { queryParams: [q('ANIMAL', 'Whale')] }], backendRefs: [to('infra-backend-v3')] },
            { matches: [{ path: prefix('/path1'), queryParams: [q('animal', 'whale')] }], backendRefs: [to('infra-backend-v1')] },
            { matches: [{ headers: [h('version', 'one')], queryParams: [q('animal', 'whale')] }], backendRefs: [to('infra-backend-v2')] },
            { matches: [{ path: prefix('/path2'), headers: [h('version', 'two')], queryParams: [q('animal', 'whale')] }], backendRefs: [to('infra-backend-v3')] },
            {
              matches: [
                { path: prefix('/path3'), queryParams: [q('animal', 'shark')] },
                { path: prefix('/path4'), headers: [h('version', 'three')], queryParams: [q('animal', 'kraken')] },
              ],
              backendRefs: [to('infra-backend-v1')],
            },
            { matches: [{ path: prefix('/path5'), queryParams: [q('animal', 'hydra')] }], backendRefs: [to('infra-backend-v1')] },
            { matches: [{ headers: [h('version', 'four')], queryParams: [q('animal', 'hydra')] }], backendRefs: [to('infra-backend-v3')] },
          ],
        }),
      ];
    },
    cases: [
      { path: '/?animal=whale', backend: 'infra-backend-v1' },
      { path: '/?animal=dolphin', backend: 'infra-backend-v2' },
      { path: '/?animal=dolphin&color=blue', backend: 'infra-backend-v3' },
      { path: '/?ANIMAL=Whale', backend: 'infra-backend-v3' },
      { path: '/?animal=whale&otherparam=irrelevant', backend: 'infra-backend-v1' },
      { path: '/?animal=dolphin&color=yellow', backend: 'infra-backend-v2' },
      { path: '/?color=blue', status: 404 },
      { path: '/?animal=dog', status: 404 },
      { path: '/?animal=whaledolphin', status: 404 },
      { path: '/', status: 404 },
      { path: '/path1?animal=whale', backend: 'infra-backend-v1' },
      { path: '/?animal=whale', headers: { version: 'one' }, backend: 'infra-backend-v2' },
      { path: '/path2?animal=whale', headers: { version: 'two' }, backend: 'infra-backend-v3' },
      { path: '/path3?animal=shark', backend: 'infra-backend-v1' },
      { path: '/path4?animal=kraken', headers: { version: 'three' }, backend: 'infra-backend-v1' },
      { path: '/?animal=shark', status: 404 },
      { path: '/path4?animal=kraken', status: 404 },
      { path: '/path5?animal=hydra', backend: 'infra-backend-v1' },
      { path: '/?animal=hydra', headers: { version: 'four' }, backend: 'infra-backend-v3' },
    ],
  },
  {
    name: 'HTTPRouteExactPathMatching',
    gateway: 'same-namespace',
    manifests: () => [
      route('exact-matching', {
        parentRefs: sameNs,
        rules: [
          { matches: [{ path: { type: 'Exact', value: '/one' } }], backendRefs: [to('infra-backend-v1')] },
          { matches: [{ path: { type: 'Exact', value: '/two' } }], backendRefs: [to('infra-backend-v2')] },
        ],
      }),
    ],
    cases: [
      { path: '/one', backend: 'infra-backend-v1' },
      { path: '/two', backend: 'infra-backend-v2' },
      { path: '/', status: 404 },
      { path: '/one/example', status: 404 },
      { path: '/two/', status: 404 },
    ],
  },
  {
    name: 'HTTPRouteMethodMatching',
    gateway: 'same-namespace',
    manifests: () => [
      route('method-matching', {
        parentRefs: sameNs,
        rules: [
          { matches: [{ method: 'POST' }], backendRefs: [to('infra-backend-v1')] },
          { matches: [{ method: 'GET' }], backendRefs: [to('infra-backend-v2')] },
          { matches: [{ path: { type: 'PathPrefix', value: '/path1' }, method: 'GET' }], backendRefs: [to('infra-backend-v1')] },
          { matches: [{ headers: [{ name: 'version', value: 'one' }], method: 'PUT' }], backendRefs: [to('infra-backend-v2')] },
          { matches: [{ path: { type: 'PathPrefix', value: '/path2' }, headers: [{ name: 'version', value: 'two' }], method: 'POST' }], backendRefs: [to('infra-backend-v3')] },
        ],
      }),
    ],
    cases: [
      { method: 'POST', path: '/', backend: 'infra-backend-v1' },
      { method: 'GET', path: '/', backend: 'infra-backend-v2' },
      { method: 'HEAD', path: '/', status: 404 },
      { method: 'GET', path: '/path1', backend: 'infra-backend-v1' },
      { method: 'PUT', path: '/', headers: { version: 'one' }, backend: 'infra-backend-v2' },
      { method: 'POST', path: '/path2', headers: { version: 'two' }, backend: 'infra-backend-v3' },
      { method: 'PUT', path: '/', status: 404 },
      { method: 'POST', path: '/path2', backend: 'infra-backend-v1' },
    ],
  },
  {
    name: 'HTTPRouteRequestHeaderModifier',
    gateway: 'same-namespace',
    manifests: () => [
      route('request-header-modifier', {
        parentRefs: sameNs,
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/set' } }],
            filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X-Header-Set', value: 'set-overwrites-values' }] } }],
            backendRefs: [to('infra-backend-v1')],
          },
          {
            matches: [{ path: { type: 'PathPrefix', value: '/add' } }],
            filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { add: [{ name: 'X-Header-Add', value: 'add-appends-values' }] } }],
            backendRefs: [to('infra-backend-v1')],
          },
          {
            matches: [{ path: { type: 'PathPrefix', value: '/remove' } }],
            filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { remove: ['X-Header-Remove'] } }],
            backendRefs: [to('infra-backend-v1')],
          },
        ],
      }),
    ],
    cases: [
      { path: '/set', headers: { 'Some-Other-Header': 'val' }, backend: 'infra-backend-v1', seen: { headers: { 'some-other-header': 'val', 'x-header-set': 'set-overwrites-values' } } },
      { path: '/set', headers: { 'X-Header-Set': 'some-other-value' }, backend: 'infra-backend-v1', seen: { headers: { 'x-header-set': 'set-overwrites-values' } } },
      { path: '/add', headers: { 'X-Header-Add': 'some-other-value' }, backend: 'infra-backend-v1', seen: { headers: { 'x-header-add': 'some-other-value, add-appends-values' } } },
      { path: '/add', backend: 'infra-backend-v1', seen: { headers: { 'x-header-add': 'add-appends-values' } } },
      { path: '/remove', headers: { 'X-Header-Remove': 'val' }, backend: 'infra-backend-v1', seen: { headers: { 'x-header-remove': undefined } } },
    ],
  },
  {
    name: 'HTTPRouteRewritePath',
    gateway: 'same-namespace',
    manifests: () => {
      const rewrite = (path: Obj) => [{ type: 'URLRewrite', urlRewrite: { path } }];
      return [
        route('rewrite-path', {
          parentRefs: sameNs,
          rules: [
            { matches: [{ path: { type: 'PathPrefix', value: '/prefix/one' } }], filters: rewrite({ type: 'ReplacePrefixMatch', replacePrefixMatch: '/one' }), backendRefs: [to('infra-backend-v1')] },
            { matches: [{ path: { type: 'PathPrefix', value: '/strip-prefix' } }], filters: rewrite({ type: 'ReplacePrefixMatch', replacePrefixMatch: '/' }), backendRefs: [to('infra-backend-v1')] },
            { matches: [{ path: { type: 'PathPrefix', value: '/full/one' } }], filters: rewrite({ type: 'ReplaceFullPath', replaceFullPath: '/one' }), backendRefs: [to('infra-backend-v1')] },
          ],
        }),
      ];
    },
    cases: [
      { path: '/prefix/one/two', backend: 'infra-backend-v1', seen: { path: '/one/two' } },
      { path: '/strip-prefix/three', backend: 'infra-backend-v1', seen: { path: '/three' } },
      { path: '/strip-prefix', backend: 'infra-backend-v1', seen: { path: '/' } },
      { path: '/full/one/two', backend: 'infra-backend-v1', seen: { path: '/one' } },
    ],
  },
  {
    name: 'HTTPRouteRewriteHost',
    gateway: 'same-namespace',
    manifests: () => [
      route('rewrite-host', {
        parentRefs: sameNs,
        hostnames: ['rewrite.example'],
        rules: [{ filters: [{ type: 'URLRewrite', urlRewrite: { hostname: 'one.example.org' } }], backendRefs: [to('infra-backend-v1')] }],
      }),
    ],
    cases: [{ host: 'rewrite.example', path: '/one', backend: 'infra-backend-v1', seen: { host: 'one.example.org' } }],
  },
  {
    name: 'HTTPRouteRedirectHostAndStatus, HTTPRouteRedirectPath, HTTPRouteRedirectScheme, HTTPRouteRedirectPort',
    gateway: 'same-namespace',
    manifests: () => {
      const redirect = (prefix: string, requestRedirect: Obj) => ({ matches: [{ path: { type: 'PathPrefix', value: prefix } }], filters: [{ type: 'RequestRedirect', requestRedirect }] });
      return [
        route('redirect', {
          parentRefs: sameNs,
          hostnames: ['redirect.example'],
          rules: [
            redirect('/hostname-redirect', { hostname: 'example.org' }),
            redirect('/host-and-status', { hostname: 'example.org', statusCode: 301 }),
            redirect('/original-prefix', { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/replacement-prefix' } }),
            redirect('/full', { path: { type: 'ReplaceFullPath', replaceFullPath: '/full-path-replacement' } }),
            redirect('/scheme', { scheme: 'https' }),
            redirect('/port', { port: 8083 }),
            redirect('/scheme-and-port', { scheme: 'https', port: 443 }),
          ],
        }),
      ];
    },
    cases: [
      { host: 'redirect.example', path: '/hostname-redirect', status: 302, responseHeaders: { location: 'http://example.org:{port}/hostname-redirect' } },
      { host: 'redirect.example', path: '/host-and-status', status: 301, responseHeaders: { location: 'http://example.org:{port}/host-and-status' } },
      { host: 'redirect.example', path: '/original-prefix/lemon', status: 302, responseHeaders: { location: 'http://redirect.example:{port}/replacement-prefix/lemon' } },
      { host: 'redirect.example', path: '/full/path/original', status: 302, responseHeaders: { location: 'http://redirect.example:{port}/full-path-replacement' } },
      { host: 'redirect.example', path: '/scheme', status: 302, responseHeaders: { location: 'https://redirect.example/scheme' } },
      { host: 'redirect.example', path: '/port', status: 302, responseHeaders: { location: 'http://redirect.example:8083/port' } },
      { host: 'redirect.example', path: '/scheme-and-port', status: 302, responseHeaders: { location: 'https://redirect.example/scheme-and-port' } },
    ],
  },
  {
    name: 'HTTPRouteInvalidNonExistentBackendRef, HTTPRouteInvalidBackendRefUnknownKind, HTTPRouteInvalidCrossNamespaceBackendRef',
    gateway: 'same-namespace',
    manifests: () => [
      route('invalid-nonexistent-backend-ref', { parentRefs: sameNs, rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/nonexistent' } }], backendRefs: [to('nonexistent')] }] }),
      route('invalid-backend-ref-unknown-kind', {
        parentRefs: sameNs,
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/unknown-kind' } }], backendRefs: [{ group: 'unknownkind.example.com', kind: 'NonExistent', name: 'infra-backend-v1', port: 8080 }] }],
      }),
      route('invalid-cross-namespace-backend-ref', { parentRefs: sameNs, rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/cross' } }], backendRefs: [to('app-backend-v1', 8080, { namespace: APP })] }] }),
    ],
    cases: [
      { path: '/nonexistent', status: 500 },
      { path: '/unknown-kind', status: 500 },
      { path: '/cross', status: 500 },
    ],
    routeStatus: {
      'invalid-nonexistent-backend-ref': ['Accepted=True:Accepted', 'ResolvedRefs=False:BackendNotFound'],
      'invalid-backend-ref-unknown-kind': ['Accepted=True:Accepted', 'ResolvedRefs=False:InvalidKind'],
      'invalid-cross-namespace-backend-ref': ['Accepted=True:Accepted', 'ResolvedRefs=False:RefNotPermitted'],
    },
  },
  {
    name: 'HTTPRouteReferenceGrant',
    gateway: 'same-namespace',
    manifests: () => [
      route('reference-grant', { parentRefs: sameNs, hostnames: ['grant.example'], rules: [{ backendRefs: [to('web-backend', 8080, { namespace: WEB })] }] }),
      {
        apiVersion: 'gateway.networking.k8s.io/v1beta1',
        kind: 'ReferenceGrant',
        metadata: { name: 'reference-grant', namespace: WEB },
        spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: INFRA }], to: [{ group: '', kind: 'Service', name: 'web-backend' }] },
      },
    ],
    cases: [{ host: 'grant.example', path: '/', backend: 'web-backend', namespace: WEB }],
    routeStatus: { 'reference-grant': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'HTTPRouteResponseHeaderModifier',
    gateway: 'same-namespace',
    manifests: () => [
      route('response-header-modifier', {
        parentRefs: sameNs,
        hostnames: ['response.example'],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/set' } }],
            filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'X-Header-Set', value: 'set-overwrites-values' }] } }],
            backendRefs: [to('infra-backend-v1')],
          },
          {
            matches: [{ path: { type: 'PathPrefix', value: '/add' } }],
            filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { add: [{ name: 'X-Header-Add', value: 'header-val-1' }] } }],
            backendRefs: [to('infra-backend-v1')],
          },
          {
            matches: [{ path: { type: 'PathPrefix', value: '/remove' } }],
            filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { remove: ['X-Pod'] } }],
            backendRefs: [to('infra-backend-v1')],
          },
        ],
      }),
    ],
    cases: [
      { host: 'response.example', path: '/set', backend: 'infra-backend-v1', responseHeaders: { 'x-header-set': 'set-overwrites-values' } },
      { host: 'response.example', path: '/add', backend: 'infra-backend-v1', responseHeaders: { 'x-header-add': 'header-val-1' } },
      { host: 'response.example', path: '/remove', backend: 'infra-backend-v1', responseHeaders: { 'x-pod': undefined } },
    ],
  },
  {
    name: 'HTTPRouteInvalidCrossNamespaceParentRef',
    gateway: 'same-namespace',
    manifests: () => [httpRoute('invalid-cross-namespace-parent-ref', { parentRefs: [{ name: 'same-namespace', namespace: INFRA }], hostnames: ['parent.example'], rules: [{ backendRefs: [to('web-backend')] }] }, WEB)],
    cases: [{ host: 'parent.example', path: '/', status: 404 }],
    routeStatus: { 'invalid-cross-namespace-parent-ref': ['Accepted=False:NotAllowedByListeners', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'HTTPRouteWeight (70/30/0 over 100 requests, within a wide tolerance)',
    gateway: 'same-namespace',
    manifests: () => [
      route('weighted-backends', {
        parentRefs: sameNs,
        hostnames: ['weight.example'],
        rules: [{ backendRefs: [to('infra-backend-v1', 8080, { weight: 70 }), to('infra-backend-v2', 8080, { weight: 30 }), to('infra-backend-v3', 8080, { weight: 0 })] }],
      }),
    ],
    cases: [{ host: 'weight.example', path: '/', distribution: { 'infra-backend-v1': [50, 90], 'infra-backend-v2': [10, 50], 'infra-backend-v3': [0, 0] } }],
  },
  {
    name: 'HTTPRouteCrossNamespace (backend-namespaces Gateway: selector on namespace labels)',
    gateway: 'backend-namespaces',
    manifests: () => [httpRoute('cross-namespace', { parentRefs: [{ name: 'backend-namespaces', namespace: INFRA }], rules: [{ backendRefs: [to('web-backend')] }] }, WEB)],
    cases: [{ path: '/', backend: 'web-backend', namespace: WEB }],
  },
];

/** Where a scenario's objects go and where their status is read: files and /routes, or the API server. */
interface World {
  readonly name: string;
  start(base: Obj[]): Promise<PorticoProcess>;
  apply(objects: Obj[]): Promise<void>;
  remove(objects: Obj[]): Promise<void>;
  /** Conditions of the first parent of an HTTPRoute, as "Type=Status:Reason" (eventually, in a cluster). */
  routeConditions(namespace: string, name: string): Promise<string[] | undefined>;
  /** attachedRoutes per listener of a Gateway. */
  attached(namespace: string, name: string): Promise<Record<string, number> | undefined>;
  stop(): Promise<void>;
}

const conditionLines = (conditions: { type: string; status: string; reason: string }[] | undefined) => conditions?.map((c) => `${c.type}=${c.status}:${c.reason}`);

function standaloneWorld(): World {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  const view = async (): Promise<any> => (await send(portico.admin, { host: 'localhost', path: '/routes' })).json();
  return {
    name: 'standalone mode',
    async start(base) {
      dir.write('base.yaml', base);
      portico = await startPortico(['--manifests', dir.path]);
      return portico;
    },
    async apply(objects) {
      dir.write('scenario.yaml', objects);
    },
    async remove() {
      dir.remove('scenario.yaml');
    },
    async routeConditions(namespace, name) {
      return conditionLines((await view()).gatewayApi.httpRoutes[`${namespace}/${name}`]?.parents[0].conditions);
    },
    async attached(namespace, name) {
      const gw = (await view()).gatewayApi.gateways[`${namespace}/${name}`];
      return gw && Object.fromEntries(gw.listeners.map((l: any) => [l.name, l.attachedRoutes]));
    },
    async stop() {
      assert.equal(await portico?.stop(), 0);
      dir.cleanup();
    },
  };
}

function clusterWorld(): World {
  let api: FakeKubeApiServer;
  let dir: string;
  let portico: PorticoProcess;
  return {
    name: 'cluster mode (status written by the leader)',
    async start(base) {
      api = await FakeKubeApiServer.start({ token: 'conformance', tls: true });
      dir = mkdtempSync(join(tmpdir(), 'portico-kubeconfig-'));
      for (const o of base) api.apply(o);
      portico = await startPortico(['--kubeconfig', api.writeKubeconfig(dir), '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms', '--publish-address', '198.51.100.10']);
      return portico;
    },
    async apply(objects) {
      for (const o of objects) api.apply(o);
    },
    async remove(objects) {
      for (const o of objects) {
        const meta = o.metadata as { name: string; namespace?: string };
        api.remove(o.kind as string, meta.namespace, meta.name);
      }
    },
    async routeConditions(namespace, name) {
      const parents = (api.get('HTTPRoute', namespace, name)?.status as { parents?: { conditions: { type: string; status: string; reason: string }[] }[] } | undefined)?.parents;
      return conditionLines(parents?.[0]?.conditions);
    },
    async attached(namespace, name) {
      const listeners = (api.get('Gateway', namespace, name)?.status as { listeners?: { name: string; attachedRoutes: number }[] } | undefined)?.listeners;
      return listeners && Object.fromEntries(listeners.map((l) => [l.name, l.attachedRoutes]));
    },
    async stop() {
      assert.equal(await portico?.stop(), 0);
      await api?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

for (const makeWorld of [standaloneWorld, clusterWorld]) {
  const world = makeWorld();
  describe(`Gateway API conformance (ported upstream scenarios), ${world.name}`, () => {
    const echoes: Awaited<ReturnType<typeof startEchoServer>>[] = [];
    const ports: Ports = {};

    before(async () => {
      for (const key of ['same-namespace', 'all-namespaces', 'backend-namespaces', 'intersection', 'listenerHostnames']) ports[key] = await freePort();
      const base: Obj[] = [
        gatewayClass(),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: INFRA } },
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: APP, labels: { 'gateway-conformance': 'backend' } } },
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WEB, labels: { 'gateway-conformance': 'backend' } } },
        gatewayWith('same-namespace', ports['same-namespace']!, [{ name: 'http', allowedRoutes: { namespaces: { from: 'Same' } } }]),
        gatewayWith('all-namespaces', ports['all-namespaces']!, [{ name: 'http', allowedRoutes: { namespaces: { from: 'All' } } }]),
        gatewayWith('backend-namespaces', ports['backend-namespaces']!, [
          { name: 'http', allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { 'gateway-conformance': 'backend' } } } } },
        ]),
      ];
      for (const [name, namespace] of [['infra-backend-v1', INFRA], ['infra-backend-v2', INFRA], ['infra-backend-v3', INFRA], ['app-backend-v1', APP], ['app-backend-v2', APP], ['web-backend', WEB]] as const) {
        const echo = await startEchoServer({ name, namespace });
        echoes.push(echo);
        base.push(...serviceWithEndpoints(name, [echo.port], { namespace, port: 8080 }));
      }
      await world.start(base);
    });

    after(async () => {
      await world.stop();
      for (const e of echoes) await e.close();
    });

    for (const scenario of SCENARIOS) {
      test(scenario.name, async () => {
        const port = ports[scenario.gateway === 'httproute-hostname-intersection' ? 'intersection' : scenario.gateway === 'httproute-listener-hostname-matching' ? 'listenerHostnames' : scenario.gateway]!;
        const objects = scenario.manifests(ports);
        await world.apply(objects);
        try {
          for (const c of scenario.cases) await expectEventually(port, c);
          for (const [name, expected] of Object.entries(scenario.routeStatus ?? {})) {
            const route = objects.find((o) => o.kind === 'HTTPRoute' && (o.metadata as { name: string }).name === name)!;
            const namespace = (route.metadata as { namespace: string }).namespace;
            await eventuallyEqual(() => world.routeConditions(namespace, name), expected, `status of ${name}`);
          }
          for (const [gw, listeners] of Object.entries(scenario.attached ?? {})) {
            const [namespace, name] = gw.split('/') as [string, string];
            await eventuallyEqual(() => world.attached(namespace, name), listeners, `attachedRoutes of ${gw}`);
          }
        } finally {
          await world.remove(objects);
        }
      });
    }
  });
}

/** Status is written asynchronously in a cluster: retried for up to 5 s. */
async function eventuallyEqual<T>(read: () => Promise<T>, expected: unknown, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  let got: T = await read();
  while (!isDeepStrictEqual(got, expected) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    got = await read();
  }
  assert.deepEqual(got, expected, what);
}

/** Retries a case for up to 5 s, as upstream's MakeRequestAndExpectEventuallyConsistentResponse does. */
async function expectEventually(port: number, c: Case): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const problem = await check(port, c);
    if (problem === undefined) return;
    if (Date.now() > deadline) assert.fail(`${c.method ?? 'GET'} ${c.host ?? 'example.com'}${c.path} ${JSON.stringify(c.headers ?? {})}: ${problem}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function check(port: number, c: Case): Promise<string | undefined> {
  if (c.distribution !== undefined) {
    const counts: Record<string, number> = {};
    for (let i = 0; i < 100; i++) {
      const r = await send(port, { host: c.host ?? 'example.com', path: c.path }).catch(() => undefined);
      if (r?.status !== 200) return `status ${r?.status ?? 'error'} during the distribution`;
      const service = r.json<EchoReply>().service;
      counts[service] = (counts[service] ?? 0) + 1;
    }
    for (const [service, [min, max]] of Object.entries(c.distribution)) {
      const n = counts[service] ?? 0;
      if (n < min || n > max) return `${service} got ${n} of 100, expected ${min}-${max} (${JSON.stringify(counts)})`;
    }
    return undefined;
  }
  const reply = await send(port, { method: c.method ?? 'GET', host: c.host ?? 'example.com', path: c.path, headers: c.headers }).catch((err: Error) => err);
  if (reply instanceof Error) return reply.message;
  const status = c.status ?? 200;
  if (reply.status !== status) return `status ${reply.status}, expected ${status}`;
  for (const [name, value] of Object.entries(c.responseHeaders ?? {})) {
    const want = value?.replace('{port}', String(port));
    if (reply.headers[name] !== want) return `response header ${name}: ${String(reply.headers[name])}, expected ${want}`;
  }
  if (c.backend === undefined) return undefined;
  const echo = reply.json<EchoReply>();
  if (echo.service !== c.backend) return `backend ${echo.service}, expected ${c.backend}`;
  if (echo.namespace !== (c.namespace ?? INFRA)) return `namespace ${echo.namespace}, expected ${c.namespace ?? INFRA}`;
  if (c.seen?.path !== undefined && echo.path !== c.seen.path) return `the pod saw path ${echo.path}, expected ${c.seen.path}`;
  if (c.seen?.host !== undefined && echo.host !== c.seen.host) return `the pod saw host ${echo.host}, expected ${c.seen.host}`;
  for (const [name, value] of Object.entries(c.seen?.headers ?? {})) {
    if (echo.headers[name] !== value) return `the pod saw ${name}: ${String(echo.headers[name])}, expected ${String(value)}`;
  }
  return undefined;
}
