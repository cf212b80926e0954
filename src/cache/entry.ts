// A stored response: what the pod answered (headers without hop-by-hop fields, the body
// whole), with what freshness and age need, and the keys it is filed under.
import type { CacheControl } from './cache-control.ts';
import type { AgeInput } from './freshness.ts';

export type StoredHeaders = Record<string, string | string[]>;

export class CacheEntry implements AgeInput {
  /** host + " " + path and query: what purge names. */
  readonly primary: string;
  /** primary + the route + the request's values of the Vary fields: one variant. */
  readonly key: string;
  readonly status: number;
  readonly reason: string;
  /** Lowercase names; content-length is the body's; no Age. Replaced (not edited) on revalidation. */
  headers: StoredHeaders;
  /** The headers flat, as res.writeHead takes them (rebuilt with `headers`). */
  flat: (string | string[])[];
  readonly body: Buffer;
  cc: CacheControl;
  requestTime: number;
  responseTime: number;
  dateValue: number;
  ageValue: number;
  /** seconds */
  lifetime: number;
  /** ms when stored (or revalidated): bans older than this do not apply. */
  storedAt: number;
  /** The response said public or s-maxage: it may answer requests with Authorization. */
  authorizedOk: boolean;
  /** Names and values came from a parser that checks them (portico's HTTP/1.1 client). */
  readonly headersChecked: boolean;
  /** Bytes it holds: headers, body, keys. */
  readonly size: number;
  /** The path (with query), what bans test. */
  readonly path: string;
  readonly host: string;

  constructor(init: {
    host: string; path: string; primary: string; key: string; status: number; reason: string; headers: StoredHeaders; body: Buffer; cc: CacheControl;
    requestTime: number; responseTime: number; dateValue: number; ageValue: number; lifetime: number; authorizedOk: boolean; headersChecked: boolean;
  }) {
    this.host = init.host;
    this.path = init.path;
    this.primary = init.primary;
    this.key = init.key;
    this.status = init.status;
    this.reason = init.reason;
    this.headers = init.headers;
    this.flat = flatten(init.headers);
    this.body = init.body;
    this.cc = init.cc;
    this.requestTime = init.requestTime;
    this.responseTime = init.responseTime;
    this.dateValue = init.dateValue;
    this.ageValue = init.ageValue;
    this.lifetime = init.lifetime;
    this.storedAt = init.responseTime;
    this.authorizedOk = init.authorizedOk;
    this.headersChecked = init.headersChecked;
    this.size = ENTRY_OVERHEAD + this.key.length * 2 + headerBytes(init.headers) + init.body.length;
  }

  setHeaders(headers: StoredHeaders): void {
    this.headers = headers;
    this.flat = flatten(headers);
  }
}

/** Objects, maps and keys around each entry, counted so that many tiny entries still fill the bound. */
const ENTRY_OVERHEAD = 256;

export function flatten(headers: StoredHeaders): (string | string[])[] {
  const out: (string | string[])[] = [];
  for (const name in headers) out.push(name, headers[name]!);
  return out;
}

/** Header bytes as sent: "name: value\r\n" per field. */
export function headerBytes(headers: StoredHeaders): number {
  let n = 0;
  for (const name in headers) {
    const v = headers[name]!;
    if (typeof v === 'string') n += name.length + v.length + 4;
    else for (const x of v) n += name.length + x.length + 4;
  }
  return n;
}
