// Command-line flags. Every flag also reads an environment variable
// (--http-port <-> PORTICO_HTTP_PORT); a flag on the command line wins.
import { parseCidrList } from '../middleware/cidr.ts';
import { parseBool, parseDuration, parseSize } from '../util/units.ts';
import { tlsCipherList } from '../tls/certificates.ts';
import { availableCpus } from '../workers/cpus.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { isIP } = process.getBuiltinModule('node:net');

export interface Options {
  manifests: string | undefined;
  kubeconfig: string | undefined;
  watchNamespace: string | undefined;
  httpPort: number;
  httpsPort: number;
  bind: string;
  adminPort: number;
  adminBind: string;
  adminRoutesAllow: string;
  challengeSecret: string | undefined;
  ingressClass: string;
  gatewayControllerName: string;
  workers: number;
  maxRequestsPerEndpoint: number;
  allowExternalName: boolean;
  upstreamConnectTimeout: number;
  upstreamResponseTimeout: number;
  upstreamIdleTimeout: number;
  upstreamKeepAlive: number;
  clientHeaderTimeout: number;
  clientRequestTimeout: number;
  clientIdleTimeout: number;
  tlsHandshakeTimeout: number;
  tlsMinVersion: 'TLSv1.2' | 'TLSv1.3';
  maxBodySize: number;
  maxClientConnections: number;
  cacheSize: number;
  cachePurgeAllow: string;
  hsts: boolean;
  hstsMaxAge: number;
  hstsIncludeSubdomains: boolean;
  hstsPreload: boolean;
  /** undefined: DEFAULT_TLS_CIPHERS (src/tls/certificates.ts) */
  tlsCiphers: string | undefined;
  /** TLS contexts kept built per process (CertificateStore) */
  tlsContexts: number;
  shutdownGrace: number;
  defaultCertificate: string | undefined;
  defaultKey: string | undefined;
  trustedProxies: string;
  proxyProtocol: boolean;
  http2: boolean;
  h2c: boolean;
  httpsRedirectPort: number;
  accessLog: boolean;
  logLevel: string;
  debounce: number;
  resync: number;
  publishAddress: string | undefined;
  publishService: string | undefined;
  leaseName: string;
  leaseNamespace: string;
  leaseDuration: number;
  renewDeadline: number;
  retryPeriod: number;
  cacheInvalidationTtl: number;
  help: boolean;
}

type Kind = 'string' | 'port' | 'duration' | 'bool' | 'int' | 'address' | 'level' | 'cidrs' | 'tls-version' | 'ciphers' | 'size' | 'workers';

interface FlagSpec {
  flag: string;
  key: keyof Options;
  kind: Kind;
  default: string | undefined;
  help: string;
  /**
   * int, duration (ms) and size (bytes): the smallest value that makes sense. Below it the flag is
   * refused like any bad value, never clamped: 0 TLS contexts is not 1.
   */
  min?: number;
  /** port: whether "off" is a value (a listener); a redirect's port cannot be off. */
  noOff?: true;
}

/** setTimeout's limit (about 24.8 days): longer timers fire at once, so longer durations are refused. */
const MAX_DURATION_MS = 2 ** 31 - 1;

// Where 0 is refused rather than given a meaning: --upstream-connect-timeout and
// --upstream-idle-timeout 0 were silently "no limit" (a pod that never answers held the
// request and its connection forever); nginx's proxy_connect_timeout and proxy_read_timeout
// have no such value either. --cache-invalidation-ttl 0 deleted an object as soon as it was
// Complete, and without --publish-service Complete means that one replica applied it: the
// others, which forget an object deleted before they reach it, kept their stale entries.
const FLAGS: FlagSpec[] = [
  { flag: 'manifests', key: 'manifests', kind: 'string', default: undefined, help: 'standalone mode: serve the Kubernetes objects in this directory (watched); without it, cluster mode' },
  { flag: 'kubeconfig', key: 'kubeconfig', kind: 'string', default: undefined, help: 'cluster mode: kubeconfig file (else in-cluster config, $KUBECONFIG, ~/.kube/config)' },
  { flag: 'watch-namespace', key: 'watchNamespace', kind: 'string', default: undefined, help: 'cluster mode: only watch this namespace (default: all)' },
  { flag: 'workers', key: 'workers', kind: 'workers', default: 'auto', help: 'processes serving traffic (auto: the CPUs available, cgroup CPU limit included; 1: one process does everything)' },
  { flag: 'http-port', key: 'httpPort', kind: 'port', default: '8080', help: 'plain HTTP listener port (0: any free port; off: no listener)' },
  { flag: 'https-port', key: 'httpsPort', kind: 'port', default: '8443', help: 'HTTPS listener port (0: any free port; off: no listener)' },
  { flag: 'bind', key: 'bind', kind: 'address', default: '::', help: 'address the HTTP and HTTPS listeners bind to (:: is IPv6 and IPv4, or IPv4 alone on a host without IPv6; 0.0.0.0 is IPv4 only)' },
  { flag: 'admin-port', key: 'adminPort', kind: 'port', default: '9090', help: 'admin listener: the dashboard (/), /healthz /readyz /metrics /routes (0: any free port; off: no listener)' },
  { flag: 'admin-bind', key: 'adminBind', kind: 'address', default: '127.0.0.1', help: 'address the admin listener binds to' },
  { flag: 'admin-routes-allow', key: 'adminRoutesAllow', kind: 'cidrs', default: '', help: 'CIDR list of peers besides loopback that may read /routes, /routes/explain and the dashboard (probes and /metrics are open to any peer)' },
  { flag: 'challenge-secret', key: 'challengeSecret', kind: 'string', default: undefined, help: 'ns/name of a Secret whose "key" signs under-attack challenges and clearances (share it between replicas; default: a key generated at start)' },
  { flag: 'ingress-class', key: 'ingressClass', kind: 'string', default: 'portico', help: 'IngressClass name served (its spec.controller must be portico.dev/ingress-controller)' },
  { flag: 'gateway-controller-name', key: 'gatewayControllerName', kind: 'string', default: 'portico.dev/gateway-controller', help: 'GatewayClass spec.controllerName served (Gateway API)' },
  { flag: 'allow-external-name', key: 'allowExternalName', kind: 'bool', default: 'false', help: 'route to ExternalName Services (off: an Ingress could send traffic outside the cluster)' },
  { flag: 'upstream-connect-timeout', key: 'upstreamConnectTimeout', kind: 'duration', default: '5s', help: 'time to connect to a pod', min: 1 },
  { flag: 'upstream-response-timeout', key: 'upstreamResponseTimeout', kind: 'duration', default: '60s', help: 'time from sending a request to the response headers (0: no limit)' },
  { flag: 'upstream-idle-timeout', key: 'upstreamIdleTimeout', kind: 'duration', default: '60s', help: 'time without data on an upstream connection mid-response', min: 1 },
  { flag: 'upstream-keepalive', key: 'upstreamKeepAlive', kind: 'duration', default: '60s', help: 'how long an idle keep-alive connection to a pod is kept (0: no keep-alive, as nginx upstreams without keepalive: HTTP/1.1 requests to pods say Connection: close, and each connection to a pod closes once its response is done)' },
  { flag: 'client-header-timeout', key: 'clientHeaderTimeout', kind: 'duration', default: '10s', help: 'time a client has to send the request headers', min: 1 },
  { flag: 'client-request-timeout', key: 'clientRequestTimeout', kind: 'duration', default: '5m', help: 'time a client has to send the whole request, body included (0: no limit)' },
  { flag: 'client-idle-timeout', key: 'clientIdleTimeout', kind: 'duration', default: '60s', help: 'idle keep-alive time of client connections (0: no keep-alive, as nginx keepalive_timeout 0: HTTP/1.x answers Connection: close and closes, HTTP/2 sends GOAWAY once its streams are done)' },
  { flag: 'tls-handshake-timeout', key: 'tlsHandshakeTimeout', kind: 'duration', default: '10s', help: 'time a client has to complete the TLS handshake; then its connection is closed', min: 1 },
  { flag: 'tls-min-version', key: 'tlsMinVersion', kind: 'tls-version', default: 'TLSv1.2', help: 'oldest TLS version clients may use: TLSv1.2 or TLSv1.3' },
  { flag: 'tls-ciphers', key: 'tlsCiphers', kind: 'ciphers', default: undefined, help: 'OpenSSL cipher list for TLS 1.2 (TLS 1.3 suites, TLS_..., may be listed too) (default: forward-secret AES-GCM and ChaCha20 suites only: no CBC, no SHA-1, no RSA key exchange)' },
  { flag: 'tls-contexts', key: 'tlsContexts', kind: 'int', default: '1000', help: 'TLS contexts (a certificate and key made ready for handshakes, about 37 KB each) kept per process; one is built at the first handshake that needs it, and the least recently used past this are let go and built again when needed (about 0.4 ms); at least 1', min: 1 },
  { flag: 'max-body-size', key: 'maxBodySize', kind: 'size', default: '1m', help: 'largest request body, unless an Ingress sets portico.dev/max-body-size (0: no limit; as nginx client_max_body_size)' },
  { flag: 'max-requests-per-endpoint', key: 'maxRequestsPerEndpoint', kind: 'int', default: '1000', help: 'requests in flight to one pod, per process; past it another pod is chosen, or 503 with Retry-After when all are that busy (0: no limit)' },
  { flag: 'max-client-connections', key: 'maxClientConnections', kind: 'int', default: '16384', help: 'client connections each proxy listener accepts at once; more are closed at once, and logged (0: no limit)' },
  { flag: 'cache-size', key: 'cacheSize', kind: 'size', default: '128MiB', help: 'memory for cached responses (portico.dev/cache), per worker process: each worker has its own cache; least recently used entries are evicted (headers and bodies counted)', min: 1 },
  { flag: 'cache-purge-allow', key: 'cachePurgeAllow', kind: 'cidrs', default: '', help: 'CIDR list of clients that may send PURGE and BAN to the proxy listeners (others get 405; the admin POST /cache/purge and /cache/ban are always there)' },
  { flag: 'hsts', key: 'hsts', kind: 'bool', default: 'true', help: 'send Strict-Transport-Security on HTTPS answers of hosts with a certificate' },
  { flag: 'hsts-max-age', key: 'hstsMaxAge', kind: 'int', default: '15724800', help: 'max-age of Strict-Transport-Security, in seconds (182 days, as ingress-nginx)' },
  { flag: 'hsts-include-subdomains', key: 'hstsIncludeSubdomains', kind: 'bool', default: 'false', help: 'add includeSubDomains to Strict-Transport-Security' },
  { flag: 'hsts-preload', key: 'hstsPreload', kind: 'bool', default: 'false', help: 'add preload to Strict-Transport-Security' },
  { flag: 'shutdown-grace', key: 'shutdownGrace', kind: 'duration', default: '25s', help: 'on SIGTERM, time to finish requests in flight before exiting; also how long a removed Gateway listener finishes its requests (0: no wait: connections close at once and requests in flight are cut)' },
  { flag: 'default-certificate', key: 'defaultCertificate', kind: 'string', default: undefined, help: 'PEM certificate for unknown SNI names (default: self-signed, generated at start)' },
  { flag: 'default-key', key: 'defaultKey', kind: 'string', default: undefined, help: 'PEM private key of --default-certificate' },
  { flag: 'trusted-proxies', key: 'trustedProxies', kind: 'cidrs', default: '', help: 'CIDR list of peers whose X-Forwarded-For (or PROXY protocol) gives the client address' },
  { flag: 'http2', key: 'http2', kind: 'bool', default: 'true', help: 'serve HTTP/2 on HTTPS listeners to clients that offer h2 in ALPN' },
  { flag: 'h2c', key: 'h2c', kind: 'bool', default: 'true', help: 'serve HTTP/2 with prior knowledge (h2c) on plain HTTP listeners, beside HTTP/1.1' },
  { flag: 'proxy-protocol', key: 'proxyProtocol', kind: 'bool', default: 'false', help: 'expect a PROXY protocol v1/v2 header from trusted proxies' },
  { flag: 'https-redirect-port', key: 'httpsRedirectPort', kind: 'port', default: '0', help: 'port in the Location of HTTP-to-HTTPS redirects (0: --https-port; in a cluster set the Service port, 443)', noOff: true },
  { flag: 'access-log', key: 'accessLog', kind: 'bool', default: 'true', help: 'log one JSON line per request' },
  { flag: 'log-level', key: 'logLevel', kind: 'level', default: 'info', help: 'trace, debug, info, warn, error or fatal' },
  { flag: 'debounce', key: 'debounce', kind: 'duration', default: '0ms', help: 'quiet time gathering a burst of changes into one route-table rebuild (0: rebuild at once; changes arriving during a rebuild go into the next)' },
  { flag: 'resync', key: 'resync', kind: 'duration', default: '10m', help: 'cluster mode: full re-list period that corrects drift', min: 1000 },
  { flag: 'publish-address', key: 'publishAddress', kind: 'string', default: undefined, help: 'cluster mode: address (IP or hostname, comma-separated) written to Ingress status' },
  { flag: 'publish-service', key: 'publishService', kind: 'string', default: undefined, help: 'cluster mode: ns/name of the Service whose load-balancer address (or ClusterIP) is written to Ingress status' },
  { flag: 'lease-name', key: 'leaseName', kind: 'string', default: 'portico-leader', help: 'cluster mode: Lease used for leader election' },
  { flag: 'lease-namespace', key: 'leaseNamespace', kind: 'string', default: 'default', help: 'cluster mode: namespace of the Lease (in a pod: its own namespace)' },
  { flag: 'lease-duration', key: 'leaseDuration', kind: 'duration', default: '15s', help: 'cluster mode: how long a lease holds without renewal', min: 1 },
  { flag: 'renew-deadline', key: 'renewDeadline', kind: 'duration', default: '10s', help: 'cluster mode: a leader that cannot renew for this long stops writing', min: 1 },
  { flag: 'retry-period', key: 'retryPeriod', kind: 'duration', default: '2s', help: 'cluster mode: how often to try to acquire or renew the lease', min: 1 },
  { flag: 'cache-invalidation-ttl', key: 'cacheInvalidationTtl', kind: 'duration', default: '1h', help: 'cluster mode: how long a Complete or Failed CacheInvalidation stays before the leader deletes it (its spec.ttl wins); at least 1s', min: 1000 },
  { flag: 'help', key: 'help', kind: 'bool', default: 'false', help: 'print this help and exit' },
];

export class FlagError extends Error {}

export function envName(flag: string): string {
  return 'PORTICO_' + flag.toUpperCase().replaceAll('-', '_');
}

/** What Kubernetes service links put in a pod's environment: PORTICO_HTTP_PORT=tcp://10.0.0.1:80 for a Service portico-http. */
const SERVICE_LINK_VALUE = /^(tcp|udp|sctp):\/\//;
const SERVICE_LINK_NAME = /_(SERVICE_HOST|SERVICE_PORT(_\w+)?|PORT|PORT_\d+_(TCP|UDP|SCTP)(_\w+)?)$/;

function convert(spec: FlagSpec, raw: string, source: string): unknown {
  const fail = (expected: string): never => {
    const hint = source.startsWith('$') && SERVICE_LINK_VALUE.test(raw) ? ' (this looks like a Kubernetes service link: set enableServiceLinks: false in the pod spec)' : '';
    throw new FlagError(`${source}: invalid value ${JSON.stringify(raw)}: expected ${expected}${hint}`);
  };
  switch (spec.kind) {
    case 'string':
      return raw;
    case 'port': {
      if (raw === 'off' && !spec.noOff) return -1;
      const n = Number(raw);
      return /^\d+$/.test(raw) && n >= 0 && n <= 65535 ? n : fail(spec.noOff ? 'a port number 0-65535' : 'a port number 0-65535, or "off"');
    }
    case 'int': {
      const n = Number(raw);
      const min = spec.min ?? 0;
      return /^\d+$/.test(raw) && Number.isSafeInteger(n) && n >= min ? n : fail(min > 0 ? `an integer of at least ${min}` : 'a non-negative integer');
    }
    case 'duration': {
      const ms = parseDuration(raw);
      const min = spec.min ?? 0;
      if (ms === undefined) return fail(min > 0 ? `a duration above 0 such as 500ms, 5s, 2m or 1h` : 'a duration such as 500ms, 5s, 2m or 1h');
      if (ms < min) return fail(min === 1 ? 'a duration above 0 such as 500ms, 5s, 2m or 1h' : `a duration of at least ${min / 1000}s`);
      return ms <= MAX_DURATION_MS ? ms : fail('a duration of at most 596h (about 24 days)');
    }
    case 'bool':
      return parseBool(raw) ?? fail('true or false');
    case 'address':
      return isIP(raw) || raw === 'localhost' ? raw : fail('an IPv4 or IPv6 address');
    case 'cidrs': {
      // A typo here would silently change which address rate limits and IP filters see.
      const invalid = parseCidrList(raw).invalid;
      return invalid.length === 0 ? raw : fail(`IP addresses or CIDRs, comma-separated (${JSON.stringify(invalid[0])} is neither)`);
    }
    case 'size': {
      const bytes = parseSize(raw);
      const min = spec.min ?? 0;
      if (bytes !== undefined && bytes >= min) return bytes;
      return fail(min > 0 ? 'a size above 0 such as 64MiB, 512m or 1g' : 'a size such as 512k, 10m or 1g (0: no limit)');
    }
    case 'workers': {
      if (raw === 'auto') return availableCpus();
      const n = Number(raw);
      return /^\d+$/.test(raw) && n >= 1 && n <= 1024 ? n : fail('a number of processes from 1, or "auto"');
    }
    case 'tls-version':
      return raw === 'TLSv1.2' || raw === 'TLSv1.3' ? raw : fail('TLSv1.2 or TLSv1.3');
    case 'ciphers':
      try {
        return tlsCipherList(raw);
      } catch {
        return fail('an OpenSSL cipher list such as ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384 (no cipher in it is known)');
      }
    case 'level':
      return ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(raw) ? raw : fail('trace, debug, info, warn, error, fatal or silent');
  }
}

/** Parses argv and the PORTICO_* environment. Throws FlagError with one line saying what and where. */
export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Options {
  const byFlag = new Map(FLAGS.map((f) => [f.flag, f]));
  const values: Partial<Record<keyof Options, unknown>> = {};

  for (const spec of FLAGS) {
    const raw = spec.default;
    values[spec.key] = raw === undefined ? undefined : convert(spec, raw, `default of --${spec.flag}`);
    const fromEnv = env[envName(spec.flag)];
    if (fromEnv !== undefined && fromEnv !== '') values[spec.key] = convert(spec, fromEnv, `$${envName(spec.flag)}`);
  }

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-h') {
      values.help = true;
      continue;
    }
    if (!arg.startsWith('--')) throw new FlagError(`unexpected argument ${JSON.stringify(arg)} (flags start with --; see --help)`);
    const eq = arg.indexOf('=');
    let name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    let raw: string | undefined = eq === -1 ? undefined : arg.slice(eq + 1);
    let spec = byFlag.get(name);
    if (!spec && name.startsWith('no-') && byFlag.get(name.slice(3))?.kind === 'bool' && raw === undefined) {
      name = name.slice(3);
      spec = byFlag.get(name);
      raw = 'false';
    }
    if (!spec) throw new FlagError(`unknown flag --${name} (see --help)`);
    if (raw === undefined) {
      if (spec.kind === 'bool') raw = 'true';
      else {
        raw = argv[++i];
        if (raw === undefined) throw new FlagError(`--${name} needs a value`);
      }
    }
    values[spec.key] = convert(spec, raw, `--${name}`);
  }

  const options = values as Options;
  if ((options.defaultCertificate === undefined) !== (options.defaultKey === undefined)) {
    throw new FlagError('--default-certificate and --default-key go together: give both or neither');
  }
  if (options.renewDeadline >= options.leaseDuration) {
    throw new FlagError(`--renew-deadline (${options.renewDeadline} ms) must be shorter than --lease-duration (${options.leaseDuration} ms)`);
  }
  // A leader must get more than one try at renewing before its deadline (client-go refuses this too).
  if (options.retryPeriod >= options.renewDeadline) {
    throw new FlagError(`--retry-period (${options.retryPeriod} ms) must be shorter than --renew-deadline (${options.renewDeadline} ms)`);
  }
  return options;
}

/**
 * PORTICO_* variables that are no flag's (a typo, most likely), leaving out the ones
 * Kubernetes service links create for a Service named portico or portico-*.
 */
export function unknownEnvironment(env: NodeJS.ProcessEnv = process.env): string[] {
  const known = new Set(FLAGS.map((f) => envName(f.flag)));
  return Object.keys(env)
    .filter((name) => name.startsWith('PORTICO_') && !known.has(name) && !SERVICE_LINK_NAME.test(name))
    .sort();
}

export function helpText(): string {
  const lines = [
    'portico: Kubernetes ingress controller and edge proxy',
    '',
    'Usage: portico [--manifests DIR] [flags]',
    '',
    'Flags (each also read from the environment variable shown):',
  ];
  for (const f of FLAGS) {
    const placeholder = f.kind === 'bool' ? '' : ` ${f.kind === 'duration' ? 'DURATION' : f.kind === 'port' || f.kind === 'workers' ? 'N' : f.kind === 'cidrs' ? 'CIDRS' : 'VALUE'}`;
    const def = f.default === undefined || f.default === '' ? '' : ` (default ${f.default})`;
    lines.push(`  --${f.flag}${placeholder}`.padEnd(40) + ` ${f.help}${def}  [$${envName(f.flag)}]`);
  }
  lines.push('', 'Durations: 500ms, 5s, 2m, 1h30m. Booleans: true/false/1/0/yes/no.');
  return lines.join('\n');
}

export const FLAG_SPECS: readonly Readonly<FlagSpec>[] = FLAGS;
