// ingress-nginx annotations, for users moving from it: each nginx.ingress.kubernetes.io/*
// annotation on an Ingress portico serves gets one warning naming the portico.dev/*
// equivalent, or saying there is none. docs/migrating-from-ingress-nginx.md is checked
// against this table by a test, so the guide and the warnings cannot drift apart.
import type { Problem } from '../model/config.ts';
import type { ObjectRef } from '../model/k8s.ts';
import { internString } from '../util/flat-string.ts';

export const NGINX_PREFIX = 'nginx.ingress.kubernetes.io/';

/** nginx annotation (without prefix) -> the portico equivalent, or a note when there is none. */
export const NGINX_EQUIVALENTS: Readonly<Record<string, { readonly portico?: string; readonly note?: string }>> = {
  'rewrite-target': { portico: 'portico.dev/rewrite-target', note: 'a path, not a regex with capture groups' },
  'use-regex': { note: 'not supported: paths are matched as the Ingress spec says (Exact, Prefix)' },
  'whitelist-source-range': { portico: 'portico.dev/ip-allow' },
  'allowlist-source-range': { portico: 'portico.dev/ip-allow' },
  'denylist-source-range': { portico: 'portico.dev/ip-deny' },
  'limit-rps': { portico: 'portico.dev/rate-limit' },
  'limit-burst-multiplier': { portico: 'portico.dev/rate-limit-burst', note: 'a number of requests, not a multiplier' },
  'proxy-body-size': { portico: 'portico.dev/max-body-size' },
  'ssl-redirect': { portico: 'portico.dev/tls-redirect' },
  'force-ssl-redirect': { portico: 'portico.dev/tls-redirect' },
  'backend-protocol': { portico: 'portico.dev/upstream-protocol', note: 'http, https, h2c or h2' },
  'proxy-ssl-secret': { portico: 'portico.dev/upstream-ca-secret' },
  'proxy-ssl-verify': { portico: 'portico.dev/upstream-insecure-skip-verify', note: 'inverted: "true" skips verification' },
  'proxy-connect-timeout': { portico: 'portico.dev/connect-timeout' },
  'proxy-read-timeout': { portico: 'portico.dev/idle-timeout' },
  'proxy-send-timeout': { portico: 'portico.dev/idle-timeout' },
  'enable-cors': { portico: 'portico.dev/cors-allow-origins', note: 'CORS is on when allowed origins are set' },
  'cors-allow-origin': { portico: 'portico.dev/cors-allow-origins' },
  'cors-allow-methods': { portico: 'portico.dev/cors-allow-methods' },
  'cors-allow-headers': { portico: 'portico.dev/cors-allow-headers' },
  'cors-allow-credentials': { portico: 'portico.dev/cors-allow-credentials' },
  'cors-max-age': { portico: 'portico.dev/cors-max-age' },
  'custom-headers': { portico: 'portico.dev/response-headers' },
  'upstream-vhost': { portico: 'portico.dev/request-headers', note: 'set Host through request-headers' },
  'websocket-services': { note: 'not needed: WebSocket is always tunnelled' },
  'proxy-http-version': { note: 'not needed: HTTP/1.1 to pods by default, h2 with portico.dev/upstream-protocol' },
  'configuration-snippet': { note: 'not supported: portico runs no nginx configuration' },
  'server-snippet': { note: 'not supported: portico runs no nginx configuration' },
  'auth-url': { note: 'not supported yet' },
  'auth-type': { note: 'not supported yet' },
  'canary': { note: 'not supported on Ingress: use Gateway API weighted backendRefs once served' },
  'affinity': { note: 'not supported yet: requests are spread by power-of-two-choices' },
};

/**
 * ingress-nginx's annotations that restrict who may use a route, with the portico.dev/*
 * annotation that replaces each (undefined: none). Ignoring one would serve the route to
 * everyone: see untranslatedAccessControls.
 */
const ACCESS_CONTROLS: Readonly<Record<string, string | undefined>> = {
  'whitelist-source-range': 'portico.dev/ip-allow',
  'allowlist-source-range': 'portico.dev/ip-allow',
  'denylist-source-range': 'portico.dev/ip-deny',
  'auth-url': undefined,
  'auth-type': undefined,
  'auth-tls-verify-client': undefined,
};

/**
 * The access-control annotations of an Ingress that portico does not apply and that were
 * not translated (the portico.dev/* equivalent is absent), full names: an Ingress moved
 * with one left on must not come up open to everyone (src/middleware/nginx-access.ts).
 */
export function untranslatedAccessControls(annotations: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const short in ACCESS_CONTROLS) {
    const value = annotations[NGINX_PREFIX + short];
    if (value === undefined) continue;
    if (short === 'auth-tls-verify-client' && value.trim().toLowerCase() === 'off') continue;
    const replacement = ACCESS_CONTROLS[short];
    if (replacement !== undefined && annotations[replacement] !== undefined) continue;
    out.push(NGINX_PREFIX + short);
  }
  return out;
}

/**
 * One warning per nginx.ingress.kubernetes.io/* annotation of a served Ingress, except
 * the untranslated access controls, which nginx-access.ts reports as one error.
 */
export function nginxAnnotationProblems(annotations: Readonly<Record<string, string>> | undefined, ingress: ObjectRef, problems: Problem[]): void {
  if (!annotations) return;
  let refused: string[] | undefined;
  for (const name in annotations) {
    if (!name.startsWith(NGINX_PREFIX)) continue;
    refused ??= untranslatedAccessControls(annotations);
    if (refused.includes(name)) continue;
    problems.push({ object: ingress, severity: 'warning', reason: 'IngressNginxAnnotation', message: ignoredMessage(name) });
  }
}

/**
 * The warning's text depends on the annotation's name alone, and a migrated cluster has
 * the same few on thousands of Ingresses: interned, one flat copy per name, where each
 * warning kept its own tree of pieces (about 90 bytes; 1.7 MB at 20,000 warnings).
 */
function ignoredMessage(name: string): string {
  const known = NGINX_EQUIVALENTS[name.slice(NGINX_PREFIX.length)];
  return internString(
    known?.portico
      ? `annotation ${name} is ingress-nginx's and is ignored; use ${known.portico}${known.note ? ` (${known.note})` : ''}`
      : `annotation ${name} is ingress-nginx's and is ignored${known?.note ? `: ${known.note}` : '; portico has no equivalent'} (see docs/migrating-from-ingress-nginx.md)`,
  );
}
