// More Gateway API conformance scenarios, ported from kubernetes-sigs/gateway-api
// conformance/tests (names kept, so a failure maps to upstream), run by
// test/conformance/harness.ts in standalone and cluster mode (in `npm test`; alone with
// `npm run conformance`).
//
// Adapted from upstream only where portico's setup needs it: every Gateway gets its own
// free loopback port(s) instead of 80/443, and HTTPS requests trust the certificate the
// runner generates for the base Secrets.
import type { Obj } from '../support/objects.ts';
import { gatewayClass } from '../support/gateway-objects.ts';
import { APP, INFRA, WEB, gatewayWith, prefix, route, runConformance, sameNs, to, type Ports, type Scenario } from './harness.ts';

const header = (name: string, value: string) => ({ name, value });
const parentRef = (name: string, extra: Obj = {}) => [{ name, namespace: INFRA, ...extra }];
const https = (name: string, certificateRefs: Obj[], extra: Obj = {}) => ({
  name,
  protocol: 'HTTPS',
  allowedRoutes: { namespaces: { from: 'All' } },
  tls: { certificateRefs },
  ...extra,
});
const secretRef = (name: string, extra: Obj = {}) => ({ group: '', kind: 'Secret', name, ...extra });
const referenceGrant = (name: string, namespace: string, from: Obj[], to: Obj[]): Obj => ({
  apiVersion: 'gateway.networking.k8s.io/v1beta1',
  kind: 'ReferenceGrant',
  metadata: { name, namespace },
  spec: { from, to },
});
const ISOLATION_LISTENERS = ['empty-hostname', 'wildcard-example-com', 'wildcard-foo-example-com', 'abc-foo-example-com'];
const fromGateways = [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: INFRA }];

/** A Gateway with an HTTP listener on `name`'s port and an HTTPS one on `name/https`'s. */
function httpAndHttps(name: string, p: Ports, certificateRefs: Obj[]): Obj {
  return gatewayWith(name, p[name]!, [
    { name: 'http', allowedRoutes: { namespaces: { from: 'Same' } } },
    https('https', certificateRefs, { port: p[`${name}/https`]! }),
  ]);
}

const SCENARIOS: Scenario[] = [
  {
    name: 'HTTPRouteMatching',
    gateway: 'same-namespace',
    manifests: () => [
      route('matching', {
        parentRefs: sameNs,
        rules: [
          { matches: [prefix('/'), { headers: [header('version', 'one')] }], backendRefs: [to('infra-backend-v1')] },
          { matches: [prefix('/v2'), { headers: [header('version', 'two')] }], backendRefs: [to('infra-backend-v2')] },
        ],
      }),
    ],
    cases: [
      { path: '/', backend: 'infra-backend-v1' },
      { path: '/example', backend: 'infra-backend-v1' },
      { path: '/', headers: { Version: 'one' }, backend: 'infra-backend-v1' },
      { path: '/v2', backend: 'infra-backend-v2' },
      { path: '/v2/example', backend: 'infra-backend-v2' },
      { path: '/', headers: { Version: 'two' }, backend: 'infra-backend-v2' },
    ],
    routeStatus: { matching: ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'HTTPRoutePathMatchOrder',
    gateway: 'same-namespace',
    manifests: () => [
      route('path-matching-order', {
        parentRefs: sameNs,
        rules: [
          { matches: [{ path: { type: 'Exact', value: '/match' } }], backendRefs: [to('infra-backend-v1')] },
          { matches: [{ path: { type: 'Exact', value: '/match/exact' } }], backendRefs: [to('infra-backend-v2')] },
          { matches: [{ path: { type: 'Exact', value: '/match/exact/one' } }], backendRefs: [to('infra-backend-v3')] },
          { matches: [prefix('/match/')], backendRefs: [to('infra-backend-v3')] },
          { matches: [prefix('/match/prefix/')], backendRefs: [to('infra-backend-v1')] },
          { matches: [prefix('/match/prefix/one')], backendRefs: [to('infra-backend-v2')] },
        ],
      }),
    ],
    cases: [
      { path: '/match/exact/one', backend: 'infra-backend-v3' },
      { path: '/match/exact', backend: 'infra-backend-v2' },
      { path: '/match', backend: 'infra-backend-v1' },
      { path: '/match/prefix/one/any', backend: 'infra-backend-v2' },
      { path: '/match/prefix/any', backend: 'infra-backend-v1' },
      { path: '/match/any', backend: 'infra-backend-v3' },
    ],
    routeStatus: { 'path-matching-order': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'HTTPRouteHeaderMatching',
    gateway: 'same-namespace',
    manifests: () => [
      route('header-matching', {
        parentRefs: sameNs,
        rules: [
          { matches: [{ headers: [header('version', 'one')] }], backendRefs: [to('infra-backend-v1')] },
          { matches: [{ headers: [header('version', 'two')] }], backendRefs: [to('infra-backend-v2')] },
          { matches: [{ headers: [header('version', 'two'), header('color', 'orange')] }], backendRefs: [to('infra-backend-v1')] },
          { matches: [{ headers: [header('color', 'blue')] }, { headers: [header('color', 'green')] }], backendRefs: [to('infra-backend-v1')] },
          { matches: [{ headers: [header('color', 'red')] }, { headers: [header('color', 'yellow')] }], backendRefs: [to('infra-backend-v2')] },
        ],
      }),
    ],
    cases: [
      { path: '/', headers: { Version: 'one' }, backend: 'infra-backend-v1' },
      { path: '/', headers: { Version: 'two' }, backend: 'infra-backend-v2' },
      { path: '/', headers: { Version: 'two', Color: 'orange' }, backend: 'infra-backend-v1' },
      { path: '/', headers: { Version: 'two', Color: 'blue' }, backend: 'infra-backend-v2' },
      { path: '/', headers: { Color: 'orange' }, status: 404 },
      { path: '/', headers: { 'Some-Other-Header': 'one' }, status: 404 },
      { path: '/', headers: { Color: 'blue' }, backend: 'infra-backend-v1' },
      { path: '/', headers: { Color: 'green' }, backend: 'infra-backend-v1' },
      { path: '/', headers: { Color: 'red' }, backend: 'infra-backend-v2' },
      { path: '/', headers: { Color: 'yellow' }, backend: 'infra-backend-v2' },
      { path: '/', headers: { Color: 'purple' }, status: 404 },
    ],
    routeStatus: { 'header-matching': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'HTTPRouteRequestHeaderModifierBackendWeights',
    gateway: 'same-namespace',
    manifests: () => {
      const tagged = (name: string) =>
        to(name, 8080, { weight: 10, filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [header('Backend', name)] } }] });
      return [route('request-header-modifier-backend-weights', { parentRefs: sameNs, rules: [{ backendRefs: [tagged('infra-backend-v1'), tagged('infra-backend-v2')] }] })];
    },
    cases: [{ path: '/' }],
    headerNamesBackend: 'Backend',
    routeStatus: { 'request-header-modifier-backend-weights': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'HTTPRouteRequestMirror',
    gateway: 'same-namespace',
    manifests: () => {
      const mirror = { type: 'RequestMirror', requestMirror: { backendRef: { name: 'infra-backend-v2', namespace: INFRA, port: 8080 } } };
      return [
        route('request-mirror', {
          parentRefs: sameNs,
          rules: [
            { matches: [prefix('/mirror')], filters: [mirror], backendRefs: [to('infra-backend-v1', 8080, { namespace: INFRA })] },
            {
              matches: [prefix('/mirror-and-modify-headers')],
              filters: [
                {
                  type: 'RequestHeaderModifier',
                  requestHeaderModifier: {
                    set: [header('X-Header-Set', 'set-overwrites-values')],
                    add: [header('X-Header-Add', 'header-val-1'), header('X-Header-Add-Append', 'header-val-2')],
                    remove: ['X-Header-Remove'],
                  },
                },
                mirror,
              ],
              backendRefs: [to('infra-backend-v1', 8080, { namespace: INFRA })],
            },
          ],
        }),
      ];
    },
    cases: [
      { path: '/mirror', backend: 'infra-backend-v1', seen: { path: '/mirror' }, mirroredTo: ['infra-backend-v2'] },
      {
        path: '/mirror-and-modify-headers',
        headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' },
        backend: 'infra-backend-v1',
        seen: {
          path: '/mirror-and-modify-headers',
          headers: { 'X-Header-Add': 'header-val-1', 'X-Header-Add-Append': 'append-val-1,header-val-2', 'X-Header-Set': 'set-overwrites-values', 'X-Header-Remove': undefined },
        },
        mirroredTo: ['infra-backend-v2'],
      },
    ],
  },
  {
    // Upstream's second mirror names "another-namespace" in one version; its copies are expected at infra-backend-v3 in INFRA.
    name: 'HTTPRouteRequestMultipleMirrors',
    gateway: 'same-namespace',
    manifests: () => {
      const mirrors = ['infra-backend-v2', 'infra-backend-v3'].map((name) => ({ type: 'RequestMirror', requestMirror: { backendRef: { name, namespace: INFRA, port: 8080 } } }));
      return [
        route('request-multiple-mirrors', {
          parentRefs: sameNs,
          rules: [
            { matches: [prefix('/mirror')], filters: mirrors, backendRefs: [to('infra-backend-v1', 8080, { namespace: INFRA })] },
            {
              matches: [prefix('/mirror-and-modify-headers')],
              filters: [
                {
                  type: 'RequestHeaderModifier',
                  requestHeaderModifier: {
                    set: [header('X-Header-Set', 'set-overwrites-values')],
                    add: [header('X-Header-Add', 'header-val-1'), header('X-Header-Add-Append', 'header-val-2')],
                    remove: ['X-Header-Remove'],
                  },
                },
                ...mirrors,
              ],
              backendRefs: [to('infra-backend-v1', 8080, { namespace: INFRA })],
            },
          ],
        }),
      ];
    },
    cases: [
      { path: '/mirror', backend: 'infra-backend-v1', seen: { path: '/mirror' }, mirroredTo: ['infra-backend-v2', 'infra-backend-v3'] },
      {
        path: '/mirror-and-modify-headers',
        headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' },
        backend: 'infra-backend-v1',
        seen: {
          path: '/mirror-and-modify-headers',
          headers: { 'X-Header-Add': 'header-val-1', 'X-Header-Add-Append': 'append-val-1,header-val-2', 'X-Header-Set': 'set-overwrites-values', 'X-Header-Remove': undefined },
        },
        mirroredTo: ['infra-backend-v2', 'infra-backend-v3'],
      },
    ],
    routeStatus: { 'request-multiple-mirrors': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    // Upstream's echo pods hold the answer for ?delay=1s; so do ours.
    name: 'HTTPRouteTimeoutRequest',
    gateway: 'same-namespace',
    manifests: () => [
      route('request-timeout', {
        parentRefs: sameNs,
        rules: [
          { matches: [prefix('/request-timeout')], timeouts: { request: '500ms' }, backendRefs: [to('infra-backend-v1')] },
          { matches: [prefix('/disable-request-timeout')], timeouts: { request: '0s' }, backendRefs: [to('infra-backend-v1')] },
        ],
      }),
    ],
    cases: [
      { path: '/request-timeout', backend: 'infra-backend-v1' },
      { path: '/request-timeout?delay=1s', status: 504 },
      { path: '/disable-request-timeout?delay=1s', backend: 'infra-backend-v1' },
    ],
  },
  {
    name: 'HTTPRouteTimeoutBackendRequest',
    gateway: 'same-namespace',
    manifests: () => [
      route('backend-request-timeout', {
        parentRefs: sameNs,
        rules: [
          { matches: [prefix('/backend-timeout')], timeouts: { backendRequest: '500ms' }, backendRefs: [to('infra-backend-v1')] },
          { matches: [prefix('/disable-backend-timeout')], timeouts: { request: '0s', backendRequest: '0s' }, backendRefs: [to('infra-backend-v1')] },
        ],
      }),
    ],
    cases: [
      { path: '/backend-timeout', backend: 'infra-backend-v1' },
      { path: '/backend-timeout?delay=1s', status: 504 },
      { path: '/disable-backend-timeout?delay=1s', backend: 'infra-backend-v1' },
    ],
  },
  {
    // Upstream's Gateway has a TLS Passthrough listener for TLSRoutes only; the HTTPRoute must not attach.
    name: 'HTTPRouteDisallowedKind',
    gateway: 'tlsroutes-only',
    ownGateways: ['tlsroutes-only'],
    manifests: (p) => [
      gatewayWith('tlsroutes-only', p['tlsroutes-only']!, [
        { name: 'tls', protocol: 'TLS', tls: { mode: 'Passthrough' }, allowedRoutes: { namespaces: { from: 'Same' }, kinds: [{ kind: 'TLSRoute' }] } },
      ]),
      route('disallowed-kind', { parentRefs: parentRef('tlsroutes-only'), rules: [{ backendRefs: [to('infra-backend-v1')] }] }),
    ],
    cases: [],
    routeStatus: { 'disallowed-kind': ['Accepted=False:NotAllowedByListeners', 'ResolvedRefs=True:ResolvedRefs'] },
    attached: { [`${INFRA}/tlsroutes-only`]: { tls: 0 } },
  },
  {
    // The grant lets the route reach app-backend-v1 only: its /v2 rule (app-backend-v2) gets 500, the rest is served.
    name: 'HTTPRoutePartiallyInvalidViaInvalidReferenceGrant',
    gateway: 'same-namespace',
    manifests: () => [
      referenceGrant('invalid-reference-grant', APP, [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: INFRA }], [{ group: '', kind: 'Service', name: 'app-backend-v1' }]),
      route('invalid-reference-grant', {
        parentRefs: sameNs,
        rules: [
          { matches: [prefix('/v2')], backendRefs: [to('app-backend-v2', 8080, { namespace: APP })] },
          { backendRefs: [to('app-backend-v1', 8080, { namespace: APP })] },
        ],
      }),
    ],
    cases: [
      { path: '/', backend: 'app-backend-v1', namespace: APP },
      { path: '/v2', status: 500 },
    ],
    routeStatus: { 'invalid-reference-grant': ['Accepted=True:Accepted', 'ResolvedRefs=False:RefNotPermitted'] },
  },
  {
    name: 'HTTPRouteInvalidParentRefNotMatchingSectionName',
    gateway: 'same-namespace',
    manifests: (p) => [
      route('httproute-listener-not-matching-route-port', {
        parentRefs: [{ name: 'same-namespace', namespace: INFRA, port: p['same-namespace']!, sectionName: 'http1' }],
        hostnames: ['not-matching-section.example'],
        rules: [{ backendRefs: [to('infra-backend-v1')] }],
      }),
    ],
    cases: [{ host: 'not-matching-section.example', path: '/', status: 404 }],
    routeStatus: { 'httproute-listener-not-matching-route-port': ['Accepted=False:NoMatchingParent', 'ResolvedRefs=True:ResolvedRefs'] },
    attached: { [`${INFRA}/same-namespace`]: { http: 0 } },
  },
  {
    // Upstream's port 81: no listener of the Gateway has it.
    name: 'HTTPRouteInvalidParentRefNotMatchingListenerPort',
    gateway: 'same-namespace',
    manifests: () => [
      route('httproute-listener-not-matching-route-port', {
        parentRefs: [{ name: 'same-namespace', namespace: INFRA, port: 81 }],
        hostnames: ['not-matching-port.example'],
        rules: [{ backendRefs: [to('infra-backend-v1')] }],
      }),
    ],
    cases: [{ host: 'not-matching-port.example', path: '/', status: 404 }],
    routeStatus: { 'httproute-listener-not-matching-route-port': ['Accepted=False:NoMatchingParent', 'ResolvedRefs=True:ResolvedRefs'] },
    attached: { [`${INFRA}/same-namespace`]: { http: 0 } },
  },
  {
    name: 'HTTPRouteAllBackendsWeightZero',
    gateway: 'same-namespace',
    manifests: () => [route('all-backends-weight-zero', { parentRefs: sameNs, rules: [{ backendRefs: [to('infra-backend-v1', 8080, { weight: 0 }), to('infra-backend-v2', 8080, { weight: 0 })] }] })],
    cases: [{ path: '/', status: 500 }],
    routeStatus: { 'all-backends-weight-zero': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'GatewayInvalidRouteKind',
    gateway: 'gateway-supported-and-invalid-route-kind',
    ownGateways: ['gateway-only-invalid-route-kind', 'gateway-supported-and-invalid-route-kind'],
    manifests: (p) => [
      gatewayWith('gateway-only-invalid-route-kind', p['gateway-only-invalid-route-kind']!, [{ name: 'http', allowedRoutes: { namespaces: { from: 'All' }, kinds: [{ kind: 'InvalidRoute' }] } }]),
      gatewayWith('gateway-supported-and-invalid-route-kind', p['gateway-supported-and-invalid-route-kind']!, [
        { name: 'http', allowedRoutes: { namespaces: { from: 'All' }, kinds: [{ kind: 'InvalidRoute' }, { kind: 'HTTPRoute' }] } },
      ]),
      route('gateway-supported-and-invalid-route-kind-control', {
        parentRefs: [{ name: 'gateway-supported-and-invalid-route-kind', sectionName: 'http' }],
        hostnames: ['supported-route-kind.example.com'],
        rules: [{ backendRefs: [to('infra-backend-v1')] }],
      }),
    ],
    // Upstream's control route: the listener still serves the kind it supports.
    cases: [{ host: 'supported-route-kind.example.com', path: '/', backend: 'infra-backend-v1' }],
    listenerConditions: {
      [`${INFRA}/gateway-only-invalid-route-kind`]: { http: ['ResolvedRefs=False:InvalidRouteKinds'] },
      [`${INFRA}/gateway-supported-and-invalid-route-kind`]: { http: ['ResolvedRefs=False:InvalidRouteKinds'] },
    },
    supportedKinds: {
      [`${INFRA}/gateway-only-invalid-route-kind`]: { http: [] },
      [`${INFRA}/gateway-supported-and-invalid-route-kind`]: { http: ['HTTPRoute'] },
    },
  },
  {
    // Upstream's first subtest (hostnames on the listeners only): each request reaches only the most specific listener.
    name: 'GatewayHTTPListenerIsolation',
    gateway: 'http-listener-isolation',
    ownGateways: ['http-listener-isolation'],
    manifests: (p) => [
      gatewayWith('http-listener-isolation', p['http-listener-isolation']!, [
        { name: 'empty-hostname', allowedRoutes: { namespaces: { from: 'All' } } },
        { name: 'wildcard-example-com', hostname: '*.example.com', allowedRoutes: { namespaces: { from: 'All' } } },
        { name: 'wildcard-foo-example-com', hostname: '*.foo.example.com', allowedRoutes: { namespaces: { from: 'All' } } },
        { name: 'abc-foo-example-com', hostname: 'abc.foo.example.com', allowedRoutes: { namespaces: { from: 'All' } } },
      ]),
      ...ISOLATION_LISTENERS.map((listener) =>
        route(`attaches-to-${listener}`, {
          parentRefs: parentRef('http-listener-isolation', { sectionName: listener }),
          rules: [{ matches: [prefix(`/${listener}`)], backendRefs: [to('infra-backend-v1')] }],
        }),
      ),
    ],
    cases: (
      [
        ['bar.com', 'empty-hostname'],
        ['bar.example.com', 'wildcard-example-com'],
        ['bar.foo.example.com', 'wildcard-foo-example-com'],
        ['abc.foo.example.com', 'abc-foo-example-com'],
      ] as const
    ).flatMap(([host, served]) => ISOLATION_LISTENERS.map((listener) => (listener === served ? { host, path: `/${listener}`, backend: 'infra-backend-v1' } : { host, path: `/${listener}`, status: 404 }))),
    attached: { [`${INFRA}/http-listener-isolation`]: { 'empty-hostname': 1, 'wildcard-example-com': 1, 'wildcard-foo-example-com': 1, 'abc-foo-example-com': 1 } },
  },
  {
    // Upstream's UDP listener is kept: it is not supported, and nothing attaches to it.
    name: 'GatewayWithAttachedRoutes',
    gateway: 'gateway-with-one-attached-route',
    ownGateways: ['gateway-with-one-attached-route', 'gateway-with-two-attached-routes', 'gateway-with-two-listeners-and-one-attached-route', 'udp'],
    manifests: (p) => {
      const fromInfra = { kinds: [{ kind: 'HTTPRoute' }], namespaces: { from: 'Selector', selector: { matchLabels: { 'kubernetes.io/metadata.name': INFRA } } } };
      const attach = (name: string, gateway: string) => route(name, { parentRefs: [{ kind: 'Gateway', name: gateway, namespace: INFRA }], rules: [{ backendRefs: [to('infra-backend-v1')] }] });
      return [
        gatewayWith('gateway-with-one-attached-route', p['gateway-with-one-attached-route']!, [{ name: 'http', allowedRoutes: fromInfra }]),
        attach('http-route-1', 'gateway-with-one-attached-route'),
        gatewayWith('gateway-with-two-attached-routes', p['gateway-with-two-attached-routes']!, [{ name: 'http', allowedRoutes: fromInfra }]),
        attach('http-route-2', 'gateway-with-two-attached-routes'),
        attach('http-route-3', 'gateway-with-two-attached-routes'),
        gatewayWith('gateway-with-two-listeners-and-one-attached-route', p['gateway-with-two-listeners-and-one-attached-route']!, [
          { name: 'udp', port: p.udp!, protocol: 'UDP', allowedRoutes: { ...fromInfra, kinds: [{ kind: 'UDPRoute' }] } },
          { name: 'http', allowedRoutes: fromInfra },
        ]),
        attach('http-route-4', 'gateway-with-two-listeners-and-one-attached-route'),
      ];
    },
    cases: [{ path: '/', backend: 'infra-backend-v1' }],
    attached: {
      [`${INFRA}/gateway-with-one-attached-route`]: { http: 1 },
      [`${INFRA}/gateway-with-two-attached-routes`]: { http: 2 },
      [`${INFRA}/gateway-with-two-listeners-and-one-attached-route`]: { udp: 0, http: 1 },
    },
  },
  {
    // Upstream's base Gateway same-namespace-with-https-listener, here defined by the scenario.
    name: 'HTTPRouteHTTPSListener',
    gateway: 'same-namespace-with-https-listener',
    ownGateways: ['same-namespace-with-https-listener'],
    manifests: (p) => [
      gatewayWith('same-namespace-with-https-listener', p['same-namespace-with-https-listener']!, [
        https('https', [secretRef('tls-validity-checks-certificate')], { allowedRoutes: { namespaces: { from: 'Same' } } }),
        https('https-with-hostname', [secretRef('tls-validity-checks-certificate')], { hostname: 'second-example.org', allowedRoutes: { namespaces: { from: 'Same' } } }),
      ]),
      route('httproute-https-test', { parentRefs: [{ name: 'same-namespace-with-https-listener' }], hostnames: ['example.org'], rules: [{ backendRefs: [to('infra-backend-v1')] }] }),
      route('httproute-https-test-no-hostname', {
        parentRefs: [{ name: 'same-namespace-with-https-listener', sectionName: 'https-with-hostname' }],
        rules: [{ backendRefs: [to('infra-backend-v1')] }],
      }),
    ],
    cases: [
      { https: true, host: 'example.org', path: '/', backend: 'infra-backend-v1' },
      { https: true, host: 'second-example.org', path: '/', backend: 'infra-backend-v1' },
    ],
    routeStatus: {
      'httproute-https-test': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'],
      'httproute-https-test-no-hostname': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'],
    },
  },
  {
    // Each Gateway: an HTTPS listener whose certificate cannot be used, and an HTTP one that still serves its control route.
    name: 'GatewayInvalidTLSConfiguration',
    gateway: 'gateway-certificate-nonexistent-secret',
    ownGateways: ['nonexistent-secret', 'unsupported-group', 'unsupported-kind', 'malformed-secret'].flatMap((n) => [`gateway-certificate-${n}`, `gateway-certificate-${n}/https`]),
    manifests: (p) => {
      const bad: [string, Obj][] = [
        ['nonexistent-secret', secretRef('nonexistent-certificate')],
        ['unsupported-group', secretRef('tls-validity-checks-certificate', { group: 'wrong.group.company.io' })],
        ['unsupported-kind', secretRef('tls-validity-checks-certificate', { kind: 'WrongKind' })],
        ['malformed-secret', secretRef('malformed-certificate')],
      ];
      return [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'malformed-certificate', namespace: INFRA },
          type: 'kubernetes.io/tls',
          // Upstream's: base64 of "Hello world", for both.
          data: { 'tls.crt': 'SGVsbG8gd29ybGQK', 'tls.key': 'SGVsbG8gd29ybGQK' },
        },
        ...bad.flatMap(([n, ref]) => [
          httpAndHttps(`gateway-certificate-${n}`, p, [ref]),
          route(`gateway-certificate-${n}-control`, {
            parentRefs: [{ name: `gateway-certificate-${n}`, sectionName: 'http' }],
            hostnames: [`${n.replace('-secret', '')}-certificate.example.com`],
            rules: [{ backendRefs: [to('infra-backend-v1')] }],
          }),
        ]),
      ];
    },
    cases: [{ host: 'nonexistent-certificate.example.com', path: '/', backend: 'infra-backend-v1' }],
    listenerConditions: Object.fromEntries(
      ['nonexistent-secret', 'unsupported-group', 'unsupported-kind', 'malformed-secret'].map((n) => [
        `${INFRA}/gateway-certificate-${n}`,
        { https: ['ResolvedRefs=False:InvalidCertificateRef', 'Programmed=False:Invalid'], http: ['ResolvedRefs=True:ResolvedRefs', 'Programmed=True:Programmed'] },
      ]),
    ),
    routeStatus: { 'gateway-certificate-malformed-secret-control': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'GatewaySecretMissingReferenceGrant',
    gateway: 'gateway-secret-missing-reference-grant',
    ownGateways: ['gateway-secret-missing-reference-grant'],
    manifests: (p) => [
      gatewayWith('gateway-secret-missing-reference-grant', p['gateway-secret-missing-reference-grant']!, [
        https('https', [secretRef('certificate', { namespace: WEB })]),
        https('https-nonexistent-secret', [secretRef('nonexistent-certificate', { namespace: WEB })], { hostname: 'nonexistent.example.com' }),
      ]),
    ],
    cases: [],
    listenerConditions: {
      [`${INFRA}/gateway-secret-missing-reference-grant`]: { https: ['ResolvedRefs=False:RefNotPermitted'], 'https-nonexistent-secret': ['ResolvedRefs=False:RefNotPermitted'] },
    },
    attached: { [`${INFRA}/gateway-secret-missing-reference-grant`]: { https: 0, 'https-nonexistent-secret': 0 } },
  },
  {
    name: 'GatewaySecretInvalidReferenceGrant',
    gateway: 'gateway-secret-invalid-reference-grant',
    ownGateways: ['gateway-secret-invalid-reference-grant'],
    manifests: (p) => [
      gatewayWith('gateway-secret-invalid-reference-grant', p['gateway-secret-invalid-reference-grant']!, [https('https', [secretRef('certificate', { namespace: WEB })])]),
      // Grants another Secret, so not this one.
      referenceGrant('reference-grant-wrong-secret', WEB, fromGateways, [{ group: '', kind: 'Secret', name: 'not-the-certificate' }]),
    ],
    cases: [],
    listenerConditions: { [`${INFRA}/gateway-secret-invalid-reference-grant`]: { https: ['ResolvedRefs=False:RefNotPermitted'] } },
  },
  {
    name: 'GatewaySecretReferenceGrantSpecific',
    gateway: 'gateway-secret-reference-grant',
    ownGateways: ['gateway-secret-reference-grant'],
    manifests: (p) => [
      gatewayWith('gateway-secret-reference-grant', p['gateway-secret-reference-grant']!, [https('https', [secretRef('certificate', { namespace: WEB })])]),
      referenceGrant('reference-grant-specific', WEB, fromGateways, [{ group: '', kind: 'Secret', name: 'certificate' }]),
      route('secret-reference-grant-route', { parentRefs: [{ name: 'gateway-secret-reference-grant' }], hostnames: ['tls.example.com'], rules: [{ backendRefs: [to('infra-backend-v1')] }] }),
    ],
    // Beyond upstream (status only): the listener serves with the granted certificate.
    cases: [{ https: true, host: 'tls.example.com', path: '/', backend: 'infra-backend-v1' }],
    listenerConditions: { [`${INFRA}/gateway-secret-reference-grant`]: { https: ['ResolvedRefs=True:ResolvedRefs', 'Programmed=True:Programmed'] } },
  },
  {
    name: 'GatewaySecretReferenceGrantAllInNamespace',
    gateway: 'gateway-secret-reference-grant-all',
    ownGateways: ['gateway-secret-reference-grant-all'],
    manifests: (p) => [
      gatewayWith('gateway-secret-reference-grant-all', p['gateway-secret-reference-grant-all']!, [https('https', [secretRef('certificate', { namespace: WEB })])]),
      referenceGrant('reference-grant-all-in-namespace', WEB, fromGateways, [{ group: '', kind: 'Secret' }]),
    ],
    cases: [],
    listenerConditions: { [`${INFRA}/gateway-secret-reference-grant-all`]: { https: ['ResolvedRefs=True:ResolvedRefs', 'Programmed=True:Programmed'] } },
  },
  {
    // Upstream adds a listener to a live Gateway and checks a route attaches to it; here the new one has its own port.
    name: 'GatewayModifyListeners',
    gateway: 'gateway-add-listener',
    ownGateways: ['gateway-add-listener', 'gateway-add-listener/second'],
    manifests: (p) => [addListenerGateway(p, false), route('http-route-add-listener', { parentRefs: [{ name: 'gateway-add-listener' }], rules: [{ backendRefs: [to('infra-backend-v1')] }] })],
    cases: [{ path: '/', backend: 'infra-backend-v1' }],
    attached: { [`${INFRA}/gateway-add-listener`]: { http: 1 } },
    then: {
      manifests: (p) => [addListenerGateway(p, true), route('http-route-add-listener', { parentRefs: [{ name: 'gateway-add-listener' }], rules: [{ backendRefs: [to('infra-backend-v1')] }] })],
      cases: [
        { path: '/', backend: 'infra-backend-v1' },
        { via: 'gateway-add-listener/second', path: '/', backend: 'infra-backend-v1' },
      ],
      attached: { [`${INFRA}/gateway-add-listener`]: { http: 1, 'http-second': 1 } },
      listenerConditions: { [`${INFRA}/gateway-add-listener`]: { 'http-second': ['Accepted=True:Accepted', 'Programmed=True:Programmed'] } },
    },
  },
  {
    // A class of its own, as upstream: its description changes.
    name: 'GatewayClassObservedGenerationBump',
    gateway: 'same-namespace',
    manifests: () => [bumpClass(1, 'before')],
    cases: [],
    bump: { kind: 'GatewayClass', name: 'gatewayclass-observed-generation-bump', update: () => [bumpClass(2, 'after')] },
  },
  {
    // Upstream changes the spec through the API; here the manifests are applied again,
    // changed (in standalone mode they state metadata.generation: no API server counts it).
    name: 'GatewayObservedGenerationBump',
    gateway: 'gateway-observed-generation-bump',
    ownGateways: ['gateway-observed-generation-bump', 'gateway-observed-generation-bump/alternate'],
    manifests: (p) => [bumpGateway(p, 1)],
    cases: [],
    bump: { kind: 'Gateway', name: 'gateway-observed-generation-bump', update: (p) => [bumpGateway(p, 2)] },
  },
  {
    name: 'HTTPRouteObservedGenerationBump',
    gateway: 'same-namespace',
    manifests: () => [bumpRoute(1, 'infra-backend-v1')],
    cases: [{ host: 'bump.example', path: '/', backend: 'infra-backend-v1' }],
    bump: { kind: 'HTTPRoute', name: 'observed-generation-bump', update: () => [bumpRoute(2, 'infra-backend-v2')] },
  },
];

function addListenerGateway(p: Ports, added: boolean): Obj {
  const listeners: Obj[] = [{ name: 'http', allowedRoutes: { namespaces: { from: 'Same' } } }];
  if (added) listeners.push({ name: 'http-second', port: p['gateway-add-listener/second']!, allowedRoutes: { namespaces: { from: 'Same' } } });
  return gatewayWith('gateway-add-listener', p['gateway-add-listener']!, listeners);
}

function bumpClass(generation: number, description: string): Obj {
  const gc = gatewayClass('gatewayclass-observed-generation-bump');
  return { ...gc, metadata: { ...(gc.metadata as Obj), generation }, spec: { ...(gc.spec as Obj), description } };
}

/** The Gateway of GatewayObservedGenerationBump: its second generation adds a listener. */
function bumpGateway(p: Ports, generation: number): Obj {
  const listeners: Obj[] = [{ name: 'http', allowedRoutes: { namespaces: { from: 'Same' } } }];
  if (generation > 1) listeners.push({ name: 'alternate', port: p['gateway-observed-generation-bump/alternate']!, allowedRoutes: { namespaces: { from: 'Same' } } });
  const gateway = gatewayWith('gateway-observed-generation-bump', p['gateway-observed-generation-bump']!, listeners);
  return { ...gateway, metadata: { ...(gateway.metadata as Obj), generation } };
}

function bumpRoute(generation: number, backend: string): Obj {
  const r = route('observed-generation-bump', { parentRefs: sameNs, hostnames: ['bump.example'], rules: [{ backendRefs: [to(backend)] }] });
  return { ...r, metadata: { ...(r.metadata as Obj), generation } };
}

runConformance('Gateway API conformance (more ported upstream scenarios)', SCENARIOS);
