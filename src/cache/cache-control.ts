// Cache-Control (RFC 9111 section 5.2) parsed into the directives a shared cache acts on.
// Unknown directives are ignored; a malformed number makes its directive absent (RFC 9111
// section 4.2.1: an invalid max-age is treated as stale, which "absent" + no other
// freshness achieves for a shared cache that has no default TTL).

export interface CacheControl {
  noStore: boolean;
  /** no-cache (also qualified, no-cache="field", which a shared cache may treat as unqualified). */
  noCache: boolean;
  /** private (also qualified): a shared cache does not store the response. */
  private: boolean;
  public: boolean;
  mustRevalidate: boolean;
  proxyRevalidate: boolean;
  /** seconds; -1 when absent */
  maxAge: number;
  sMaxAge: number;
  staleWhileRevalidate: number;
  staleIfError: number;
}

const NONE: CacheControl = Object.freeze({
  noStore: false,
  noCache: false,
  private: false,
  public: false,
  mustRevalidate: false,
  proxyRevalidate: false,
  maxAge: -1,
  sMaxAge: -1,
  staleWhileRevalidate: -1,
  staleIfError: -1,
});

/** Delta-seconds: digits only; huge values are capped (RFC 9111 section 1.2.2: 2^31). */
function seconds(text: string | undefined): number {
  if (text === undefined) return -1;
  const t = text.trim().replace(/^"(.*)"$/, '$1');
  if (!/^\d+$/.test(t)) return -1;
  return Math.min(Number(t), 2147483648);
}

/** One or more Cache-Control header values (repeated headers are one list). */
export function parseCacheControl(value: string | readonly string[] | undefined): CacheControl {
  if (value === undefined) return NONE;
  const text = typeof value === 'string' ? value : value.join(',');
  if (text.trim() === '') return NONE;
  const cc: CacheControl = { ...NONE };
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    const name = (eq === -1 ? part : part.slice(0, eq)).trim().toLowerCase();
    const arg = eq === -1 ? undefined : part.slice(eq + 1);
    switch (name) {
      case 'no-store': cc.noStore = true; break;
      case 'no-cache': cc.noCache = true; break;
      case 'private': cc.private = true; break;
      case 'public': cc.public = true; break;
      case 'must-revalidate': cc.mustRevalidate = true; break;
      case 'proxy-revalidate': cc.proxyRevalidate = true; break;
      case 'max-age': cc.maxAge = seconds(arg); break;
      case 's-maxage': cc.sMaxAge = seconds(arg); break;
      case 'stale-while-revalidate': cc.staleWhileRevalidate = seconds(arg); break;
      case 'stale-if-error': cc.staleIfError = seconds(arg); break;
    }
  }
  return cc;
}
