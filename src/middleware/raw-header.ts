import type { ProxyRequest } from '../proxy/exchange-types.ts';

/**
 * The first value of a request header, from rawHeaders: req.headers is a lazy getter
 * that copies every header, which a middleware looking for one header should not pay.
 * `lower` must be lowercase.
 */
export function rawHeader(req: Pick<ProxyRequest, 'rawHeaders'>, lower: string): string | undefined {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === lower.length && name.toLowerCase() === lower) return raw[i + 1];
  }
  return undefined;
}
