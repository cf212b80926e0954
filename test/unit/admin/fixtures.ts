// Hand-written routing configs and test certificates shared by the admin and TLS tests.
import { generate } from 'selfsigned';
import type { BackendConfig, CertificateConfig, PolicyConfig, Problem, RouteConfig, RoutingConfig, UpstreamAddress } from '../../../src/model/config.ts';
import { NO_GATEWAYS } from '../../../src/model/config.ts';
import type { Matcher, MatcherFactory, RouteEntry } from '../../../src/routing/matcher.ts';
import type { RouteCompiler } from '../../../src/routing/table.ts';

/** Compiles a route without a proxy: the admin endpoints only read route.config. */
export const compileForTest: RouteCompiler = (config) => ({ config, handle: () => {} });

/**
 * A linear-scan matcher, so these tests do not depend on the production matcher.
 * It only needs to exist; the admin endpoints never match requests.
 */
export const scanMatcher: MatcherFactory = <T,>(entries: readonly RouteEntry<T>[]): Matcher<T> => ({
  match: (host, path) => entries.find((e) => e.host === host && (e.pathType === 'Exact' ? path === e.path : path.startsWith(e.path)))?.value,
  size: entries.length,
  withHosts: (changes) => scanMatcher([...entries.filter((e) => !changes.has(e.host)), ...[...changes.values()].flat()]),
});

export function backend(namespace: string, service: string, port: string, addresses: UpstreamAddress[], error?: BackendConfig['error']): BackendConfig {
  return { key: `${namespace}/${service}:${port}`, namespace, service, port, addresses, ...(error ? { error } : {}) };
}

export function route(
  ingress: string,
  host: string,
  path: string,
  pathType: 'Exact' | 'Prefix',
  target: BackendConfig,
  policies: PolicyConfig[] = [],
): RouteConfig {
  const [namespace, name] = ingress.split('/') as [string, string];
  return { id: `${ingress}|${host}|${pathType}|${path}`, source: { kind: 'Ingress', namespace, name }, host, path, pathType, backend: target, policies, tls: false };
}

export const sampleProblem: Problem = {
  object: { kind: 'Ingress', namespace: 'shop', name: 'web' },
  severity: 'warning',
  reason: 'ServiceNotFound',
  message: 'spec.rules[0].http.paths[2].backend: service "shop/gone" not found',
};

/** A small but varied config: exact and wildcard hosts, a rule without host, errors, policies, IPv6. */
export function sampleConfig(): RoutingConfig {
  const web = backend('shop', 'web', '80', [
    { host: '10.0.0.1', port: 8080 },
    { host: '10.0.0.2', port: 8080 },
  ]);
  const api = backend('shop', 'api', 'http', [{ host: 'fd00::5', port: 9000 }]);
  const gone = backend('shop', 'gone', '80', [], 'ServiceNotFound');
  const fallback = backend('default', 'fallback', '8080', [{ host: '10.0.9.9', port: 8080 }]);
  const routes: RouteConfig[] = [
    route('shop/web', 'shop.example.com', '/', 'Prefix', web),
    route('shop/web', 'shop.example.com', '/api', 'Prefix', api, [{ name: 'rate-limit', config: { rps: 10 } }, { name: 'cors', config: {} }]),
    route('shop/web', 'shop.example.com', '/api', 'Exact', api),
    route('shop/web', 'shop.example.com', '/old', 'Prefix', gone),
    route('shop/wild', '*.example.com', '/', 'Prefix', web),
    route('ops/any', '', '/status', 'Exact', web),
  ];
  const defaultBackend: RouteConfig = { ...route('default/catch-all', '', '/', 'Prefix', fallback), id: 'default/catch-all|default' };
  const certificates = new Map<string, CertificateConfig>([
    ['shop.example.com', { secret: 'shop/shop-tls', cert: 'CERT', key: 'KEY' }],
    ['*.example.com', { secret: 'shop/wild-tls', cert: 'CERT2', key: 'KEY2' }],
  ]);
  return { routes, defaultBackend, certificates, servedIngresses: ['shop/web', 'shop/wild', 'ops/any', 'default/catch-all'], ignoredIngresses: [{ ingress: 'shop/legacy', reason: 'spec.ingressClassName "nginx" belongs to another controller (portico serves: portico)' }], problems: [sampleProblem], ...NO_GATEWAYS };
}

/** n routes over n/10 hosts, for the large-table test. */
export function largeConfig(n: number): RoutingConfig {
  const routes: RouteConfig[] = [];
  for (let i = 0; i < n; i++) {
    const target = backend('bulk', `svc-${i % 500}`, '80', [{ host: `10.${(i >> 8) & 255}.${i & 255}.1`, port: 8080 }]);
    routes.push(route(`bulk/ing-${Math.floor(i / 10)}`, `host-${Math.floor(i / 10)}.bulk.example.com`, `/p${i % 10}`, 'Prefix', target));
  }
  return { routes, certificates: new Map(), servedIngresses: [], ignoredIngresses: [], problems: [], ...NO_GATEWAYS };
}

export interface TestPki {
  /** PEM of the test CA clients trust */
  readonly ca: string;
  /** A leaf certificate for the given DNS names, signed by the test CA. */
  issue(commonName: string, dnsNames?: string[]): Promise<{ cert: string; key: string }>;
}

/** A throwaway CA; leaf certificates use EC P-256 keys, fast to generate. */
export async function createTestPki(): Promise<TestPki> {
  const ca = await generate([{ name: 'commonName', value: 'portico test CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return {
    ca: ca.cert,
    async issue(commonName, dnsNames = [commonName]) {
      const leaf = await generate([{ name: 'commonName', value: commonName }], {
        keyType: 'ec',
        algorithm: 'sha256',
        ca: { key: ca.private, cert: ca.cert },
        extensions: [
          { name: 'basicConstraints', cA: false },
          { name: 'keyUsage', digitalSignature: true, critical: true },
          { name: 'extKeyUsage', serverAuth: true },
          { name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2 as const, value })) },
        ],
      });
      return { cert: leaf.cert, key: leaf.private };
    },
  };
}
