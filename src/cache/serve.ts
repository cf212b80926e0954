// Answering from a stored entry: its headers (the policies' response headers merged in,
// as the forwarder would), Age and X-Cache, and the body; or 304 when the client's
// conditional request is satisfied. No forwarder, no pod.
import type { ProxyResponse } from '../proxy/exchange-types.ts';
import type { RequestContext } from '../proxy/context.ts';
import { buildResponseHeaders } from '../proxy/headers.ts';
import type { HeaderEntry } from '../middleware/header-list.ts';
import type { CacheEntry, StoredHeaders } from './entry.ts';
import { currentAge, notModified } from './freshness.ts';

/** The client's If-None-Match / If-Modified-Since. */
export class Conditionals {
  readonly ifNoneMatch: string | undefined;
  readonly ifModifiedSince: string | undefined;
  constructor(ifNoneMatch: string | undefined, ifModifiedSince: string | undefined) {
    this.ifNoneMatch = ifNoneMatch;
    this.ifModifiedSince = ifModifiedSince;
  }
  get present(): boolean {
    return this.ifNoneMatch !== undefined || this.ifModifiedSince !== undefined;
  }
  satisfiedBy(headers: StoredHeaders): boolean {
    return notModified(this.ifNoneMatch, this.ifModifiedSince, headers);
  }
}

export const NO_CONDITIONALS = new Conditionals(undefined, undefined);

/** Fields a 304 leaves out: it has no body (RFC 9110 section 15.4.5). */
function without304Fields(out: (string | string[])[]): (string | string[])[] {
  const kept: (string | string[])[] = [];
  for (let i = 0; i < out.length; i += 2) {
    const name = out[i] as string;
    if (name === 'content-length' || name === 'content-type' || name === 'content-encoding' || name === 'content-range') continue;
    kept.push(name, out[i + 1]!);
  }
  return kept;
}

/** The head for the client: the stored (or pod's) headers, the policies' ones, Age and X-Cache. */
export function clientHead(headers: StoredHeaders, extra: readonly HeaderEntry[] | undefined, xCache: string, age: number | undefined, notModifiedAnswer: boolean): (string | string[])[] {
  let out = buildResponseHeaders(headers, extra);
  if (notModifiedAnswer) out = without304Fields(out);
  if (age !== undefined) out.push('age', String(age));
  out.push('x-cache', xCache);
  return out;
}

/** Answers `ctx` from `entry`. */
export function serveEntry(ctx: RequestContext, res: ProxyResponse, entry: CacheEntry, xCache: string, conditionals: Conditionals): void {
  if (res.headersSent || res.destroyed) return;
  const age = Math.floor(Math.max(0, currentAge(entry, Date.now())));
  const extra = ctx.responseHeaders;
  if (conditionals.present && entry.status === 200 && conditionals.satisfiedBy(entry.headers)) {
    res.headersChecked = entry.headersChecked;
    res.writeHead(304, clientHead(entry.headers, extra, xCache, age, true));
    ctx.responseBytes = 0;
    res.end();
    return;
  }
  let out: (string | string[])[];
  if (extra === undefined) {
    // The common case: the stored list as is, plus Age and X-Cache.
    out = entry.flat.slice();
    out.push('age', String(age), 'x-cache', xCache);
  } else {
    out = clientHead(entry.headers, extra, xCache, age, false);
  }
  res.headersChecked = entry.headersChecked;
  if (entry.reason !== '') res.writeHead(entry.status, entry.reason, out);
  else res.writeHead(entry.status, out);
  if (ctx.req.method === 'HEAD') {
    ctx.responseBytes = 0;
    res.end();
  } else {
    ctx.responseBytes = entry.body.length;
    res.end(entry.body);
  }
}
