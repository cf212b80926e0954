// /routes/explain?url=...: which route a request for this URL gets, and why; or why none
// does. It asks the live route table itself (the same match() the proxy calls), then
// explains a miss from the table's config: no rule for the host, a path no rule of the
// host matches, an Ingress for the host that is not portico's (class), or a backend
// with no ready endpoint. Runs in the admin listener only, never on the request path.
import type { BackendConfig, IgnoredIngress, RouteConfig } from '../model/config.ts';
import type { RouteTable } from '../routing/table.ts';
import { hasDotSegment, isValidHost, normalizeHost, normalizePath, splitTarget, withoutPathParameters } from '../routing/request-target.ts';
import { activePolicies } from '../middleware/registry.ts';
import type { AddressesOf } from './routes-view.ts';

export interface ExplainInput {
  /** "http://host/path?q", "https://host:port/path" or "host/path". */
  readonly url: string;
  readonly method?: string;
  /** Request headers, for Gateway API header matches. */
  readonly headers?: readonly (readonly [string, string])[];
}

export type ExplainReason = 'matched' | 'default-backend' | 'no-endpoints' | 'no-host' | 'path-mismatch' | 'class-not-served' | 'invalid-url';

export interface ExplainedBackend {
  service: string;
  port: string;
  endpoints: string[];
  state: string;
  weight?: number;
}

export interface ExplainResult {
  url: string;
  host: string;
  path: string;
  /** The Gateway listener port the URL names, when it is one. */
  listenerPort?: number;
  /** Whether a route takes the request (it may still be answered 503: see reason). */
  matched: boolean;
  reason: ExplainReason;
  /** What portico answers: the pod's answer ("forwarded"), or its own status. */
  outcome: 'forwarded' | 404 | 503 | 400;
  message: string;
  route?: { id: string; object: string; kind: string; host: string; path: string; pathType: string; policies: string[]; backends: ExplainedBackend[] };
  /** Path miss: the rules of the host that were tried. */
  candidates?: { object: string; path: string; pathType: string }[];
  /** Ingresses with a rule for the host that portico does not serve, and why. */
  ignored?: IgnoredIngress[];
}

export interface ExplainContext {
  readonly table: RouteTable;
  /** The hosts of an Ingress ("ns/name") portico ignores, from the object store. */
  readonly ingressHosts?: (key: string) => readonly string[];
  /** A backend's ready addresses now (default: its route's own). */
  readonly addressesOf?: AddressesOf;
}

const MAX_CANDIDATES = 50;

function object(r: RouteConfig): string {
  return `${r.source.namespace}/${r.source.name}`;
}

function hostLabel(host: string): string {
  return host === '' ? '(any host)' : host;
}

/** Whether rule host `rule` covers request host `host` ("" covers all; "*.a.b" one label for Ingress, any for Gateway). */
export function hostCovers(rule: string, host: string, anyLabels: boolean): boolean {
  if (rule === '' || rule === host) return true;
  if (!rule.startsWith('*.')) return false;
  const suffix = rule.slice(1);
  if (!host.endsWith(suffix) || host.length === suffix.length) return false;
  return anyLabels || !host.slice(0, host.length - suffix.length).includes('.');
}

function backendsOf(r: RouteConfig, at: AddressesOf): ExplainedBackend[] {
  const view = (b: BackendConfig, weight?: number): ExplainedBackend => {
    const addresses = at(b);
    return {
      service: `${b.namespace}/${b.service}`,
      port: b.port,
      endpoints: addresses.map((a) => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`)),
      state: b.error ?? (addresses.length === 0 ? 'no ready endpoint' : 'ok'),
      ...(weight !== undefined ? { weight } : {}),
    };
  };
  return r.backends !== undefined ? r.backends.map((w) => view(w.backend, w.weight)) : [view(r.backend)];
}

function routeView(r: RouteConfig, at: AddressesOf): NonNullable<ExplainResult['route']> {
  return { id: r.id, object: object(r), kind: r.source.kind, host: hostLabel(r.host), path: r.path, pathType: r.pathType, policies: activePolicies(r), backends: backendsOf(r, at) };
}

/** Splits the URL as the proxy would see it as an absolute-form target (no dot-segment resolution); undefined when it is not a URL. */
function parseUrl(text: string): { host: string; port: number | undefined; path: string; query: string } | undefined {
  const trimmed = text.trim().split('#')[0]!;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(trimmed);
  if (scheme !== null && scheme[1]!.toLowerCase() !== 'http' && scheme[1]!.toLowerCase() !== 'https') return undefined;
  const target = splitTarget(scheme === null ? `http://${trimmed}` : trimmed);
  if (target === undefined || target.path === '*') return undefined;
  const hash = target.query.indexOf('#');
  const query = hash === -1 ? target.query : target.query.slice(0, hash);
  const port = /:(\d+)$/.exec(target.authority);
  return { host: target.authority, port: port === null ? undefined : Number(port[1]), path: target.path, query };
}

export function explain(input: ExplainInput, context: ExplainContext): ExplainResult {
  const { table } = context;
  const parsed = parseUrl(input.url);
  const invalid = (message: string): ExplainResult => ({ url: input.url, host: '', path: '', matched: false, reason: 'invalid-url', outcome: 400, message });
  if (parsed === undefined) return invalid('not a URL: expected http://host/path (or host/path)');
  if (!isValidHost(parsed.host)) return invalid(`invalid host ${JSON.stringify(parsed.host)}`);
  const host = normalizeHost(parsed.host);
  const path = normalizePath(parsed.path);
  if (path === undefined || hasDotSegment(path)) return invalid(`the path ${parsed.path} is refused with 400 (an encoded slash or backslash, a control character, or a "." or ".." segment)`);
  const listenerPort = parsed.port !== undefined && table.config.listeners.has(parsed.port) ? parsed.port : undefined;
  const rawHeaders: string[] = ['host', parsed.host];
  for (const [name, value] of input.headers ?? []) rawHeaders.push(name, value);
  const request = { method: (input.method ?? 'GET').toUpperCase(), rawHeaders };
  const route = table.match(host, withoutPathParameters(path), request, parsed.query, listenerPort);
  const base = { url: input.url, host, path, ...(listenerPort !== undefined ? { listenerPort } : {}) };

  if (route !== undefined && route !== table.defaultRoute) {
    const r = route.config;
    const view = routeView(r, context.addressesOf ?? ((b) => b.addresses));
    const how = r.pathType === 'Exact' ? 'is exactly' : r.pathType === 'RegularExpression' ? 'matches the regular expression' : 'is under the prefix';
    const hostWhy = r.host === '' ? 'a rule without host (any host)' : r.host === host ? `the rule host ${r.host}` : `the wildcard ${r.host}`;
    const down = view.backends.every((b) => b.state !== 'ok' || (b.weight !== undefined && b.weight === 0));
    if (down) {
      return { ...base, matched: true, reason: 'no-endpoints', outcome: 503, route: view, message: `${r.source.kind} ${object(r)} matches (${hostWhy}; the path ${how} ${r.path}), but its backend cannot take traffic: ${view.backends.map((b) => `${b.service}:${b.port}: ${b.state}`).join('; ')}. portico answers 503.` };
    }
    return { ...base, matched: true, reason: 'matched', outcome: 'forwarded', route: view, message: `${r.source.kind} ${object(r)}: ${hostWhy} matches ${hostLabel(host)}, and the path ${path} ${how} ${r.path} (${r.pathType}; the longest match wins). Forwarded to ${view.backends.map((b) => `${b.service}:${b.port}`).join(', ')}.` };
  }

  // No rule matched: say why, from the rules that cover the host.
  const gateway = listenerPort !== undefined;
  const rules = table.config.routes.filter((r) => (gateway ? r.port === listenerPort : r.port === undefined) && hostCovers(r.host, host, gateway));
  // Ingress: only the most specific host group is tried (exact, then wildcard, then no host).
  const group = gateway ? rules : (['exact', 'wildcard', 'any'] as const).map((g) => rules.filter((r) => (g === 'exact' ? r.host === host : g === 'wildcard' ? r.host.startsWith('*.') : r.host === ''))).find((l) => l.length > 0) ?? [];
  const ignored = gateway ? [] : table.config.ignoredIngresses.filter((i) => (context.ingressHosts?.(i.ingress) ?? []).some((h) => hostCovers(h.toLowerCase(), host, false)));
  let reason: ExplainReason;
  let message: string;
  let candidates: ExplainResult['candidates'];
  if (group.length === 0) {
    reason = ignored.length > 0 ? 'class-not-served' : 'no-host';
    message = ignored.length > 0
      ? `no rule portico serves covers ${hostLabel(host)}; ${ignored.map((i) => `Ingress ${i.ingress} has one, but ${i.reason}`).join('; ')}`
      : `no rule covers the host ${hostLabel(host)}${gateway ? ` on Gateway listener port ${listenerPort}` : ''} (exact, wildcard or without host)`;
  } else {
    reason = 'path-mismatch';
    candidates = group.slice(0, MAX_CANDIDATES).map((r) => ({ object: object(r), path: r.path, pathType: r.pathType }));
    const groupHost = group[0]!.host;
    message = `rules for ${hostLabel(groupHost)} exist, but none matches the path ${path}${gateway ? ' (with its method, headers and query)' : ''}: Prefix matches whole segments (/app does not match /apps), Exact only itself`;
    if (!gateway && groupHost !== '' && groupHost === host && rules.some((r) => r.host !== host)) message += `; rules of less specific hosts (wildcards, no host) are not tried once ${host} has rules`;
    if (ignored.length > 0) message += `; ${ignored.map((i) => `Ingress ${i.ingress} also names this host, but ${i.reason}`).join('; ')}`;
  }
  const d = table.defaultRoute;
  if (!gateway && route !== undefined && d !== undefined) {
    const view = routeView(d.config, context.addressesOf ?? ((b) => b.addresses));
    const down = view.backends.every((b) => b.state !== 'ok');
    return { ...base, matched: true, reason: down ? 'no-endpoints' : 'default-backend', outcome: down ? 503 : 'forwarded', route: view, ...(candidates ? { candidates } : {}), ...(ignored.length ? { ignored } : {}), message: `${message}. The default backend of Ingress ${object(d.config)} takes it${down ? `, but it cannot take traffic: ${view.backends.map((b) => b.state).join('; ')} (503)` : ''}.` };
  }
  return { ...base, matched: false, reason, outcome: 404, ...(candidates ? { candidates } : {}), ...(ignored.length ? { ignored } : {}), message: `${message}. portico answers 404.` };
}
