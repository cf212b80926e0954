// The RFC 9111 rules of a shared cache, as pure functions: may a response be stored
// (section 3), how long it is fresh (4.2.1), how old it is (4.2.3), may it be served
// stale (4.2.4, RFC 5861), and is a client's conditional request satisfied (4.3.2).
import type { CacheControl } from './cache-control.ts';

/** Statuses "heuristically cacheable" (RFC 9110 section 15.1): a default TTL may apply to them. 206 is left out: ranges are not cached. */
const CACHEABLE_BY_DEFAULT = new Set([200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]);

export interface StorableInput {
  readonly status: number;
  readonly cc: CacheControl;
  /** The response's headers, lowercase names. */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The request that fetched it carried Authorization. */
  readonly requestHadAuthorization: boolean;
  /** portico.dev/cache-ttl in seconds (0: none). */
  readonly defaultTtl: number;
}

/** Why the response is not stored, or undefined when it may be. */
export function notStorableReason(input: StorableInput): string | undefined {
  const { status, cc, headers } = input;
  if (status < 200 || status === 206 || status === 304) return `status ${status}`;
  if (cc.noStore) return 'no-store';
  if (cc.private) return 'private';
  if (headers['set-cookie'] !== undefined) return 'set-cookie';
  const vary = headers.vary;
  if (vary !== undefined && varyNames(vary) === '*') return 'vary *';
  // RFC 9111 section 3.5: a response to an authenticated request needs an explicit permission.
  // must-revalidate would be one too; portico asks for public or s-maxage, the ones that say "shared".
  if (input.requestHadAuthorization && !cc.public && cc.sMaxAge < 0) return 'authorization';
  const explicit = cc.sMaxAge >= 0 || cc.maxAge >= 0 || headers.expires !== undefined;
  if (cc.noCache) return headers.etag !== undefined || headers['last-modified'] !== undefined ? undefined : 'no-cache without a validator';
  if (explicit) return undefined;
  return CACHEABLE_BY_DEFAULT.has(status) && input.defaultTtl > 0 ? undefined : 'no freshness information';
}

/** One header value as text (repeated ones joined). */
export function headerText(value: string | readonly string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.join(', ');
}

/** HTTP-date -> ms since the epoch; NaN when invalid. */
export function httpDate(value: string | readonly string[] | undefined): number {
  const text = headerText(value);
  return text === undefined ? NaN : Date.parse(text);
}

/**
 * Freshness lifetime in seconds (RFC 9111 section 4.2.1): s-maxage, then max-age, then
 * Expires minus Date; else the route's default TTL for statuses cacheable by default.
 * `responseTime` stands in for a missing or invalid Date.
 */
export function freshnessLifetime(status: number, cc: CacheControl, headers: StorableInput['headers'], defaultTtl: number, responseTime: number): number {
  if (cc.noCache) return 0;
  if (cc.sMaxAge >= 0) return cc.sMaxAge;
  if (cc.maxAge >= 0) return cc.maxAge;
  if (headers.expires !== undefined) {
    const expires = httpDate(headers.expires);
    if (Number.isNaN(expires)) return 0; // an invalid Expires means "already expired"
    const date = httpDate(headers.date);
    return Math.max(0, (expires - (Number.isNaN(date) ? responseTime : date)) / 1000);
  }
  return CACHEABLE_BY_DEFAULT.has(status) ? defaultTtl : 0;
}

/** What the age calculation needs of a stored response (RFC 9111 section 4.2.3). */
export interface AgeInput {
  /** ms when the request was sent, and when the response was received */
  readonly requestTime: number;
  readonly responseTime: number;
  /** ms of the Date header (NaN: none) */
  readonly dateValue: number;
  /** seconds of the Age header (0: none) */
  readonly ageValue: number;
}

/** Current age in seconds at `now` (ms). */
export function currentAge(r: AgeInput, now: number): number {
  const apparentAge = Number.isNaN(r.dateValue) ? 0 : Math.max(0, (r.responseTime - r.dateValue) / 1000);
  const responseDelay = (r.responseTime - r.requestTime) / 1000;
  const correctedAgeValue = r.ageValue + responseDelay;
  const correctedInitialAge = Math.max(apparentAge, correctedAgeValue);
  const residentTime = (now - r.responseTime) / 1000;
  return correctedInitialAge + residentTime;
}

/** The Age header's seconds (0 when absent or invalid). */
export function ageValue(value: string | readonly string[] | undefined): number {
  const text = headerText(value)?.trim();
  return text !== undefined && /^\d+$/.test(text) ? Math.min(Number(text), 2147483648) : 0;
}

/**
 * Whether a stale copy may be served at all (RFC 9111 section 4.2.4): not when the
 * response forbids it (no-cache, must-revalidate; proxy-revalidate and s-maxage, which
 * bind shared caches).
 */
export function mayServeStale(cc: CacheControl): boolean {
  return !cc.noCache && !cc.mustRevalidate && !cc.proxyRevalidate && cc.sMaxAge < 0;
}

/** Vary's field names, lowercase, sorted and joined by ","; "*" when it has a "*". */
export function varyNames(value: string | readonly string[] | undefined): string {
  const text = headerText(value);
  if (text === undefined) return '';
  const names = new Set<string>();
  for (const part of text.split(',')) {
    const name = part.trim().toLowerCase();
    if (name === '*') return '*';
    if (name !== '') names.add(name);
  }
  return [...names].sort().join(',');
}

/** Weak comparison of entity tags (RFC 9110 section 8.8.3.2): W/ is ignored. */
function weakMatch(a: string, b: string): boolean {
  const strip = (t: string) => (t.startsWith('W/') ? t.slice(2) : t);
  return strip(a.trim()) === strip(b.trim());
}

/**
 * The client's conditional headers are satisfied by a stored response (RFC 9111 section
 * 4.3.2, RFC 9110 section 13.2.2): If-None-Match (weak comparison, "*" matches) decides
 * when present, else If-Modified-Since against Last-Modified (or Date).
 */
export function notModified(ifNoneMatch: string | undefined, ifModifiedSince: string | undefined, headers: StorableInput['headers']): boolean {
  if (ifNoneMatch !== undefined) {
    const etag = headerText(headers.etag);
    if (ifNoneMatch.trim() === '*') return true;
    if (etag === undefined) return false;
    return ifNoneMatch.split(',').some((tag) => tag.trim() !== '' && weakMatch(tag, etag));
  }
  if (ifModifiedSince !== undefined) {
    const since = Date.parse(ifModifiedSince);
    if (Number.isNaN(since)) return false;
    const modified = httpDate(headers['last-modified'] ?? headers.date);
    return !Number.isNaN(modified) && modified <= since;
  }
  return false;
}
