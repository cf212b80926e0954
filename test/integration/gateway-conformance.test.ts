// Gateway API conformance, ported: the HTTPRoute and Gateway scenarios of
// kubernetes-sigs/gateway-api conformance/tests that apply to what portico serves and
// pass, run through the real CLI in standalone and cluster mode by the runner in
// test/conformance/harness.ts (which says how upstream's setup is adapted). More
// scenarios are in test/conformance/gateway-more.test.ts.
import type { Obj } from '../support/objects.ts';
import { httpRoute } from '../support/gateway-objects.ts';
import { APP, INFRA, WEB, gatewayWith, prefix, route, runConformance, sameNs, to, type Scenario } from '../conformance/harness.ts';

const h = (name: string, value: string) => ({ name, value });

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
    ownGateways: ['httproute-hostname-intersection'],
    manifests: (p) => [
      gatewayWith('httproute-hostname-intersection', p['httproute-hostname-intersection']!, [
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
    ownGateways: ['httproute-listener-hostname-matching'],
    manifests: (p) => [
      gatewayWith('httproute-listener-hostname-matching', p['httproute-listener-hostname-matching']!, [
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
          {
            matches: [{ path: { type: 'PathPrefix', value: '/multiple' } }],
            filters: [
              {
                type: 'RequestHeaderModifier',
                requestHeaderModifier: {
                  set: [{ name: 'X-Header-Set-1', value: 'header-set-1' }, { name: 'X-Header-Set-2', value: 'header-set-2' }],
                  add: [{ name: 'X-Header-Add-1', value: 'header-add-1' }, { name: 'X-Header-Add-2', value: 'header-add-2' }, { name: 'X-Header-Add-3', value: 'header-add-3' }],
                  remove: ['X-Header-Remove-1', 'X-Header-Remove-2'],
                },
              },
            ],
            backendRefs: [to('infra-backend-v1')],
          },
          {
            matches: [{ path: { type: 'PathPrefix', value: '/case-insensitivity' } }],
            filters: [
              {
                type: 'RequestHeaderModifier',
                requestHeaderModifier: { set: [{ name: 'X-Header-Set', value: 'header-set' }], add: [{ name: 'X-Header-Add', value: 'header-add' }], remove: ['X-Header-Remove'] },
              },
            ],
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
      {
        path: '/multiple',
        headers: { 'X-Header-Set-2': 'set-val-2', 'X-Header-Add-2': 'add-val-2', 'X-Header-Remove-2': 'remove-val-2', 'Another-Header': 'another-header-val' },
        backend: 'infra-backend-v1',
        seen: {
          headers: {
            'X-Header-Set-1': 'header-set-1',
            'X-Header-Set-2': 'header-set-2',
            'X-Header-Add-1': 'header-add-1',
            'X-Header-Add-2': 'add-val-2,header-add-2',
            'X-Header-Add-3': 'header-add-3',
            'Another-Header': 'another-header-val',
            'X-Header-Remove-1': undefined,
            'X-Header-Remove-2': undefined,
          },
        },
      },
      {
        path: '/case-insensitivity',
        headers: { 'x-header-set': 'original-val-set', 'x-header-add': 'original-val-add', 'x-header-remove': 'original-val-remove', 'Another-Header': 'another-header-val' },
        backend: 'infra-backend-v1',
        seen: { headers: { 'X-Header-Set': 'header-set', 'X-Header-Add': 'original-val-add,header-add', 'Another-Header': 'another-header-val', 'X-Header-Remove': undefined } },
      },
    ],
  },
  {
    // Upstream's pods add response headers when asked with X-Echo-Set-Header; so do ours.
    name: 'HTTPRouteResponseHeaderModifier',
    gateway: 'same-namespace',
    manifests: () => {
      const modify = (path: string, responseHeaderModifier: Obj) => ({
        matches: [prefix(path)],
        filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier }],
        backendRefs: [to('infra-backend-v1')],
      });
      return [
        route('response-header-modifier', {
          parentRefs: sameNs,
          rules: [
            modify('/set', { set: [h('X-Header-Set', 'set-overwrites-values')] }),
            modify('/add', { add: [h('X-Header-Add', 'add-appends-values')] }),
            modify('/remove', { remove: ['X-Header-Remove'] }),
            modify('/multiple', {
              set: [h('X-Header-Set-1', 'header-set-1'), h('X-Header-Set-2', 'header-set-2')],
              add: [h('X-Header-Add-1', 'header-add-1'), h('X-Header-Add-2', 'header-add-2'), h('X-Header-Add-3', 'header-add-3')],
              remove: ['X-Header-Remove-1', 'X-Header-Remove-2'],
            }),
            modify('/case-insensitivity', { set: [h('X-Header-Set', 'header-set')], add: [h('X-Header-Add', 'header-add')], remove: ['X-Header-Remove'] }),
          ],
        }),
      ];
    },
    cases: [
      { path: '/set', headers: { 'X-Echo-Set-Header': 'Some-Other-Header:val' }, backend: 'infra-backend-v1', responseHeaders: { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' } },
      {
        path: '/set',
        headers: { 'X-Echo-Set-Header': 'Some-Other-Header:val,X-Header-Set:some-other-value' },
        backend: 'infra-backend-v1',
        responseHeaders: { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' },
      },
      { path: '/add', headers: { 'X-Echo-Set-Header': 'Some-Other-Header:val' }, backend: 'infra-backend-v1', responseHeaders: { 'Some-Other-Header': 'val', 'X-Header-Add': 'add-appends-values' } },
      {
        path: '/add',
        headers: { 'X-Echo-Set-Header': 'Some-Other-Header:val,X-Header-Add:some-other-value' },
        backend: 'infra-backend-v1',
        responseHeaders: { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value,add-appends-values' },
      },
      { path: '/remove', headers: { 'X-Echo-Set-Header': 'X-Header-Remove:val' }, backend: 'infra-backend-v1', responseHeaders: { 'X-Header-Remove': undefined } },
      {
        path: '/multiple',
        headers: { 'X-Echo-Set-Header': 'X-Header-Set-2:set-val-2,X-Header-Add-2:add-val-2,X-Header-Remove-2:remove-val-2,Another-Header:another-header-val' },
        backend: 'infra-backend-v1',
        responseHeaders: {
          'X-Header-Set-1': 'header-set-1',
          'X-Header-Set-2': 'header-set-2',
          'X-Header-Add-1': 'header-add-1',
          'X-Header-Add-2': 'add-val-2,header-add-2',
          'X-Header-Add-3': 'header-add-3',
          'Another-Header': 'another-header-val',
          'X-Header-Remove-1': undefined,
          'X-Header-Remove-2': undefined,
        },
      },
      {
        path: '/case-insensitivity',
        headers: { 'X-Echo-Set-Header': 'x-header-set:original-val-set,x-header-add:original-val-add,x-header-remove:original-val-remove,Another-Header:another-header-val' },
        backend: 'infra-backend-v1',
        responseHeaders: { 'X-Header-Set': 'header-set', 'X-Header-Add': 'original-val-add,header-add', 'Another-Header': 'another-header-val', 'X-Header-Remove': undefined },
      },
    ],
  },
  {
    name: 'HTTPRouteWeight',
    gateway: 'same-namespace',
    manifests: () => [
      route('weighted-backends', {
        parentRefs: sameNs,
        rules: [{ backendRefs: [to('infra-backend-v1', 8080, { weight: 70 }), to('infra-backend-v2', 8080, { weight: 30 }), to('infra-backend-v3', 8080, { weight: 0 })] }],
      }),
    ],
    cases: [{ path: '/' }],
    distribution: { 'infra-backend-v1': 0.7, 'infra-backend-v2': 0.3, 'infra-backend-v3': 0 },
    routeStatus: { 'weighted-backends': ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] },
  },
  {
    name: 'HTTPRouteInvalidCrossNamespaceParentRef',
    gateway: 'same-namespace',
    manifests: () => [
      route('invalid-cross-namespace-parent-ref', { parentRefs: [{ name: 'same-namespace', namespace: INFRA }], hostnames: ['cross-parent.example'], rules: [{ backendRefs: [to('web-backend')] }] }, WEB),
    ],
    // Not attached, so not served.
    cases: [{ host: 'cross-parent.example', path: '/', status: 404 }],
    routeStatus: { 'invalid-cross-namespace-parent-ref': ['Accepted=False:NotAllowedByListeners', 'ResolvedRefs=True:ResolvedRefs'] },
    attached: { [`${INFRA}/same-namespace`]: { http: 0 } },
  },
  {
    name: 'HTTPRouteRewritePath',
    gateway: 'same-namespace',
    manifests: () => {
      const rewrite = (path: Obj) => [{ type: 'URLRewrite', urlRewrite: { path } }];
      const modifyHeaders = {
        type: 'RequestHeaderModifier',
        requestHeaderModifier: {
          set: [{ name: 'X-Header-Set', value: 'set-overwrites-values' }],
          add: [{ name: 'X-Header-Add', value: 'header-val-1' }, { name: 'X-Header-Add-Append', value: 'header-val-2' }],
          remove: ['X-Header-Remove'],
        },
      };
      return [
        route('rewrite-path', {
          parentRefs: sameNs,
          rules: [
            { matches: [{ path: { type: 'PathPrefix', value: '/prefix/one' } }], filters: rewrite({ type: 'ReplacePrefixMatch', replacePrefixMatch: '/one' }), backendRefs: [to('infra-backend-v1')] },
            { matches: [{ path: { type: 'PathPrefix', value: '/strip-prefix' } }], filters: rewrite({ type: 'ReplacePrefixMatch', replacePrefixMatch: '/' }), backendRefs: [to('infra-backend-v1')] },
            { matches: [{ path: { type: 'PathPrefix', value: '/full/one' } }], filters: rewrite({ type: 'ReplaceFullPath', replaceFullPath: '/one' }), backendRefs: [to('infra-backend-v1')] },
            {
              matches: [{ path: { type: 'PathPrefix', value: '/full/rewrite-path-and-modify-headers' } }],
              filters: [...rewrite({ type: 'ReplaceFullPath', replaceFullPath: '/test' }), modifyHeaders],
              backendRefs: [to('infra-backend-v1')],
            },
            {
              matches: [{ path: { type: 'PathPrefix', value: '/prefix/rewrite-path-and-modify-headers' } }],
              filters: [...rewrite({ type: 'ReplacePrefixMatch', replacePrefixMatch: '/prefix' }), modifyHeaders],
              backendRefs: [to('infra-backend-v1')],
            },
          ],
        }),
      ];
    },
    cases: [
      { path: '/prefix/one/two', backend: 'infra-backend-v1', seen: { path: '/one/two' } },
      { path: '/strip-prefix/three', backend: 'infra-backend-v1', seen: { path: '/three' } },
      { path: '/strip-prefix', backend: 'infra-backend-v1', seen: { path: '/' } },
      { path: '/full/one/two', backend: 'infra-backend-v1', seen: { path: '/one' } },
      { path: '/full/rewrite-path-and-modify-headers/test', headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1', 'X-Header-Set': 'set-val' }, backend: 'infra-backend-v1', seen: { path: '/test', headers: { 'X-Header-Add': 'header-val-1', 'X-Header-Add-Append': 'append-val-1,header-val-2', 'X-Header-Set': 'set-overwrites-values', 'X-Header-Remove': undefined } } },
      { path: '/prefix/rewrite-path-and-modify-headers/one', headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1', 'X-Header-Set': 'set-val' }, backend: 'infra-backend-v1', seen: { path: '/prefix/one', headers: { 'X-Header-Add': 'header-val-1', 'X-Header-Add-Append': 'append-val-1,header-val-2', 'X-Header-Set': 'set-overwrites-values', 'X-Header-Remove': undefined } } },
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
    name: 'HTTPRouteCrossNamespace (backend-namespaces Gateway: selector on namespace labels)',
    gateway: 'backend-namespaces',
    manifests: () => [httpRoute('cross-namespace', { parentRefs: [{ name: 'backend-namespaces', namespace: INFRA }], rules: [{ backendRefs: [to('web-backend')] }] }, WEB)],
    cases: [{ path: '/', backend: 'web-backend', namespace: WEB }],
  },
];

runConformance('Gateway API conformance (ported upstream scenarios)', SCENARIOS);
