/**
 * A header name lowercased. The names most requests and responses carry come back as
 * constants: a constant is already in V8's string table with its hash, while a fresh
 * lowercase copy used as a property or Map key is made, hashed and looked up there each
 * time (about 2% of the CPU per request when the response headers were keyed so).
 */
export function lowerName(raw: string): string {
  switch (raw.length) {
    case 4:
      if (raw === 'Host' || raw === 'host') return 'host';
      if (raw === 'Date' || raw === 'date') return 'date';
      if (raw === 'Vary' || raw === 'vary') return 'vary';
      if (raw === 'ETag' || raw === 'etag') return 'etag';
      break;
    case 6:
      if (raw === 'Accept' || raw === 'accept') return 'accept';
      if (raw === 'Server' || raw === 'server') return 'server';
      if (raw === 'Cookie' || raw === 'cookie') return 'cookie';
      if (raw === 'Origin' || raw === 'origin') return 'origin';
      break;
    case 7:
      if (raw === 'Referer' || raw === 'referer') return 'referer';
      break;
    case 10:
      if (raw === 'Connection' || raw === 'connection') return 'connection';
      if (raw === 'User-Agent' || raw === 'user-agent') return 'user-agent';
      if (raw === 'Keep-Alive' || raw === 'keep-alive') return 'keep-alive';
      if (raw === 'Set-Cookie' || raw === 'set-cookie') return 'set-cookie';
      break;
    case 12:
      if (raw === 'Content-Type' || raw === 'content-type') return 'content-type';
      break;
    case 13:
      if (raw === 'Cache-Control' || raw === 'cache-control') return 'cache-control';
      if (raw === 'Authorization' || raw === 'authorization') return 'authorization';
      if (raw === 'Last-Modified' || raw === 'last-modified') return 'last-modified';
      if (raw === 'Accept-Ranges' || raw === 'accept-ranges') return 'accept-ranges';
      if (raw === 'If-None-Match' || raw === 'if-none-match') return 'if-none-match';
      break;
    case 14:
      if (raw === 'Content-Length' || raw === 'content-length') return 'content-length';
      break;
    case 15:
      if (raw === 'Accept-Encoding' || raw === 'accept-encoding') return 'accept-encoding';
      if (raw === 'Accept-Language' || raw === 'accept-language') return 'accept-language';
      if (raw === 'X-Forwarded-For' || raw === 'x-forwarded-for') return 'x-forwarded-for';
      break;
    case 16:
      if (raw === 'Content-Encoding' || raw === 'content-encoding') return 'content-encoding';
      break;
    case 17:
      if (raw === 'Transfer-Encoding' || raw === 'transfer-encoding') return 'transfer-encoding';
      break;
  }
  return raw.toLowerCase();
}
