// portico.dev/cors-allow-origins (plus -methods, -headers, -credentials, -max-age):
// CORS handled at the edge. A preflight (OPTIONS with Origin and
// Access-Control-Request-Method) is answered here with 204; an allowed origin gets
// the Access-Control-Allow-* headers, a disallowed one gets none (the browser then
// refuses). Other requests from an allowed origin are forwarded and their response
// gets Access-Control-Allow-Origin (and -Credentials, and Vary: Origin when the
// answer depends on the origin).
//
// Origins: "*", exact origins ("https://app.example.com"), or one wildcard label
// ("https://*.example.com" matches any subdomain, not example.com itself). With
// credentials the request's origin is echoed, never "*" (browsers refuse "*" there).
//
// Invalid values: entries that are not origins (or methods, or header names) are
// skipped, one warning per annotation naming them all. With no valid origin the policy
// is off (one error): no CORS headers, which is the browser's same-origin default, the
// closed state for CORS.
import type { Handler, RequestContext } from '../proxy/context.ts';
import { parseAnnotationDuration, parseBool } from '../util/units.ts';
import { annotation, reportIgnored, reportInvalid, reportInvalidEntries } from './annotations.ts';
import { splitList } from './cidr.ts';
import { exactLength } from '../util/exact-length.ts';
import { flatString } from '../util/flat-string.ts';
import { withHeaders, type HeaderList } from './header-list.ts';
import { rawHeader } from './raw-header.ts';
import type { Middleware, PolicyDefinition, PolicyParseInput } from './types.ts';

export const CORS_ALLOW_ORIGINS = 'portico.dev/cors-allow-origins';
export const CORS_ALLOW_METHODS = 'portico.dev/cors-allow-methods';
export const CORS_ALLOW_HEADERS = 'portico.dev/cors-allow-headers';
export const CORS_ALLOW_CREDENTIALS = 'portico.dev/cors-allow-credentials';
export const CORS_MAX_AGE = 'portico.dev/cors-max-age';

export const DEFAULT_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'];
export const DEFAULT_HEADERS = ['DNT', 'User-Agent', 'X-Requested-With', 'If-Modified-Since', 'Cache-Control', 'Content-Type', 'Range', 'Authorization'];
export const DEFAULT_MAX_AGE_SECONDS = 86_400;

export interface CorsConfig {
  /** "*", exact origins (lowercase), or "scheme://*.suffix" patterns. */
  readonly origins: readonly string[];
  readonly methods: readonly string[];
  readonly headers: readonly string[];
  readonly credentials: boolean;
  readonly maxAgeSeconds: number;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** An origin as browsers send it (scheme://host[:port], lowercase, default port dropped); undefined if not one. */
export function normalizeOrigin(entry: string): string | undefined {
  if (entry === '*') return '*';
  const wildcard = /^https?:\/\/\*\./i.test(entry);
  const probe = wildcard ? entry.replace('*.', 'wildcard-label.') : entry;
  let url: URL;
  try {
    url = new URL(probe);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '' || url.pathname !== '/') return undefined;
  if (/[/?#]./.test(probe.slice(url.protocol.length + 2))) return undefined;
  return wildcard ? url.origin.replace('wildcard-label.', '*.') : url.origin;
}

/**
 * The valid entries of a list annotation. Its invalid entries are one problem (one line):
 * skipped with a warning while others are left, else what `whenNone` says happens.
 */
function parseList(
  input: PolicyParseInput,
  name: string,
  text: string,
  valid: (entry: string) => string | undefined,
  expected: string,
  whenNone: { readonly consequence: string; readonly severity: 'warning' | 'error' },
): string[] {
  const out: string[] = [];
  const invalid: string[] = [];
  for (const entry of splitList(text)) {
    const value = valid(entry);
    if (value === undefined) invalid.push(entry);
    // A list of one, already normal, is the annotation's own text: no second copy.
    else if (!out.includes(value)) out.push(value === text ? text : flatString(value));
  }
  if (invalid.length > 0) {
    if (out.length > 0) reportInvalidEntries(input, name, invalid, expected, `skipped; the other entries apply`, 'warning');
    else reportInvalidEntries(input, name, invalid, expected, whenNone.consequence, whenNone.severity);
  }
  // Kept in the config of each Ingress: flat entries (an origin is pieces of a URL and of a
  // slice of the annotation) in a store of the list's length, not push()'s 17.
  return exactLength(out);
}

// Shared lists, handed to requests as they are (header-list.ts: never edited in place).
const NO_HEADERS: HeaderList = [];
const STAR_HEADERS: HeaderList = [['access-control-allow-origin', '*']];
const CREDENTIALS_HEADERS: HeaderList = [['access-control-allow-credentials', 'true']];

/**
 * What a CORS config decides, made once per distinct config and shared by its routes
 * (about 1.2 KB each when every route had its own). Immutable after construction but
 * for the preflight headers, made at the first preflight.
 */
class CorsRules {
  private readonly config: CorsConfig;
  private readonly any: boolean;
  /** "*" answers the same to every origin; otherwise the answer depends on Origin. */
  readonly star: boolean;
  /** Exact origins: a few, so an array (a Set of one costs 230 bytes). */
  private readonly exact: readonly string[];
  private readonly wildcards: readonly { readonly scheme: string; readonly suffix: string }[] | undefined;
  private readonly credentials: HeaderList;
  private preflightList: HeaderList | undefined = undefined;

  constructor(config: CorsConfig) {
    this.config = config;
    this.any = config.origins.includes('*');
    this.star = this.any && !config.credentials;
    // The config's own list when every entry is an exact origin (the usual case), else
    // slice(): filter() leaves room for 17 entries (152 bytes) in an array of one.
    const isExact = (o: string) => o !== '*' && !o.includes('://*.');
    this.exact = config.origins.every(isExact) ? config.origins : config.origins.filter(isExact).slice();
    const wildcards = config.origins.filter((o) => o.includes('://*.')).map((o) => ({ scheme: o.slice(0, o.indexOf('*')), suffix: o.slice(o.indexOf('*') + 1) }));
    this.wildcards = wildcards.length > 0 ? wildcards : undefined;
    this.credentials = config.credentials ? CREDENTIALS_HEADERS : NO_HEADERS;
  }

  /** `origin` lowercased. */
  allowed(origin: string): boolean {
    if (this.any || this.exact.includes(origin)) return true;
    if (this.wildcards === undefined) return false;
    for (const w of this.wildcards) {
      if (origin.length > w.scheme.length + w.suffix.length && origin.startsWith(w.scheme) && origin.endsWith(w.suffix)) {
        const label = origin.slice(w.scheme.length, origin.length - w.suffix.length);
        if (!/[/:@]/.test(label)) return true;
      }
    }
    return false;
  }

  originHeaders(origin: string): HeaderList {
    return this.star ? STAR_HEADERS : [['access-control-allow-origin', origin], ...this.credentials, ['vary', 'Origin']];
  }

  private preflightHeaders(): HeaderList {
    return (this.preflightList ??= [
      ['access-control-allow-methods', this.config.methods.join(', ')],
      ['access-control-allow-headers', this.config.headers.join(', ')],
      ['access-control-max-age', String(this.config.maxAgeSeconds)],
    ]);
  }

  preflight(ctx: RequestContext, origin: string): void {
    const res = ctx.res;
    if (res.headersSent || res.destroyed) return;
    const headers: [string, string][] = [['content-length', '0']];
    if (this.allowed(origin.toLowerCase())) for (const h of [...this.originHeaders(origin), ...this.preflightHeaders()]) headers.push([h[0], h[1]]);
    else if (!this.star) headers.push(['vary', 'Origin']);
    res.writeHead(204, headers.flat());
    res.end();
  }
}

/**
 * The rules of each config object. Equal configs are one object already (the policy
 * configs of an Ingress are shared by value: src/middleware/shared-configs.ts), so a
 * WeakMap by identity finds them without a key: SharedByValue's key (the config as
 * JSON, about 270 bytes with the default methods and headers), WeakRef and finalizer
 * cell cost about 400 bytes per distinct config, 4 MB at 10,000 Ingresses with an origin
 * each. Equal configs that are distinct objects (rare) get rules of their own.
 */
const sharedRules = new WeakMap<CorsConfig, CorsRules>();

/** The per-route part: the rules and the next handler, one closure. */
function corsHandler(rules: CorsRules, next: Handler): Handler {
  return (ctx) => {
    const origin = rawHeader(ctx.req, 'origin');
    if (origin === undefined) {
      next(ctx);
      return;
    }
    if (ctx.req.method === 'OPTIONS' && rawHeader(ctx.req, 'access-control-request-method') !== undefined) {
      rules.preflight(ctx, origin);
      return;
    }
    if (rules.allowed(origin.toLowerCase())) ctx.responseHeaders = withHeaders(ctx.responseHeaders, rules.originHeaders(origin));
    next(ctx);
  };
}

export const corsPolicy: PolicyDefinition<CorsConfig> = {
  name: 'cors',
  annotations: [CORS_ALLOW_ORIGINS, CORS_ALLOW_METHODS, CORS_ALLOW_HEADERS, CORS_ALLOW_CREDENTIALS, CORS_MAX_AGE],
  order: 40,
  parse(input) {
    const originsText = annotation(input, CORS_ALLOW_ORIGINS);
    const others = [CORS_ALLOW_METHODS, CORS_ALLOW_HEADERS, CORS_ALLOW_CREDENTIALS, CORS_MAX_AGE];
    if (originsText === undefined) {
      for (const name of others) if (annotation(input, name) !== undefined) reportIgnored(input, name, `has no effect without ${CORS_ALLOW_ORIGINS}`);
      return undefined;
    }
    const corsOff = 'CORS is off (no CORS headers are sent)';
    const origins = parseList(input, CORS_ALLOW_ORIGINS, originsText, normalizeOrigin, 'an origin such as https://app.example.com, https://*.example.com or *', {
      consequence: `no valid origin is left: ${corsOff}`,
      severity: 'error',
    });
    if (origins.length === 0) {
      // Invalid entries were reported with the consequence; an empty value is said here.
      if (splitList(originsText).length === 0) input.report({ severity: 'error', reason: 'InvalidAnnotation', message: `annotation ${CORS_ALLOW_ORIGINS}: empty list; ${corsOff}` });
      return undefined;
    }

    let methods = DEFAULT_METHODS;
    const methodsText = annotation(input, CORS_ALLOW_METHODS);
    if (methodsText !== undefined) {
      const parsed = parseList(input, CORS_ALLOW_METHODS, methodsText, (m) => (TOKEN.test(m) ? m.toUpperCase() : undefined), 'an HTTP method such as GET', {
        consequence: `the default methods apply (${DEFAULT_METHODS.join(', ')})`,
        severity: 'warning',
      });
      if (parsed.length > 0) methods = parsed;
    }

    let headers = DEFAULT_HEADERS;
    const headersText = annotation(input, CORS_ALLOW_HEADERS);
    if (headersText !== undefined) {
      const parsed = parseList(input, CORS_ALLOW_HEADERS, headersText, (h) => (h === '*' || TOKEN.test(h) ? h : undefined), 'a header name such as X-Api-Key, or *', {
        consequence: `the default headers apply (${DEFAULT_HEADERS.join(', ')})`,
        severity: 'warning',
      });
      if (parsed.length > 0) headers = parsed;
    }

    let credentials = false;
    const credentialsText = annotation(input, CORS_ALLOW_CREDENTIALS);
    if (credentialsText !== undefined) {
      const parsed = parseBool(credentialsText);
      if (parsed === undefined) reportInvalid(input, CORS_ALLOW_CREDENTIALS, credentialsText, 'true or false', 'credentials are not allowed', 'warning');
      else credentials = parsed;
    }
    if (credentials && origins.includes('*')) {
      input.report({
        severity: 'warning',
        reason: 'InsecureAnnotation',
        message: `annotation ${CORS_ALLOW_ORIGINS}: "*" with credentials echoes every origin: any web site can make credentialed requests`,
      });
    }

    let maxAgeSeconds = DEFAULT_MAX_AGE_SECONDS;
    const maxAgeText = annotation(input, CORS_MAX_AGE);
    if (maxAgeText !== undefined) {
      const ms = parseAnnotationDuration(maxAgeText);
      if (ms === undefined) reportInvalid(input, CORS_MAX_AGE, maxAgeText, 'a duration such as 600s, 10m or 24h', `the max age is ${DEFAULT_MAX_AGE_SECONDS}s`, 'warning');
      else maxAgeSeconds = Math.floor(ms / 1000);
    }
    return { origins, methods, headers, credentials, maxAgeSeconds };
  },
  create(config): Middleware {
    // The rules are the same for every route of this config: made once, shared.
    let rules = sharedRules.get(config);
    if (rules === undefined) sharedRules.set(config, (rules = new CorsRules(config)));
    return (next: Handler): Handler => corsHandler(rules, next);
  },
};
