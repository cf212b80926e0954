// node:http2, loaded when a connection first needs it: the module and its nghttp2
// binding cost about 9 MB per process, and many deployments never see an HTTP/2 client
// or pod. Not an ESM import, which would load it with portico.
import type * as Http2 from 'node:http2';

let loaded: typeof Http2 | undefined;

export function nodeHttp2(): typeof Http2 {
  return (loaded ??= process.getBuiltinModule('node:http2'));
}

// The protocol's own numbers (RFC 9113 §6.1 and §7), as node:http2's constants holds
// them, usable without loading the module.
export const NGHTTP2_FLAG_END_STREAM = 0x1;
export const NGHTTP2_INTERNAL_ERROR = 0x2;
export const NGHTTP2_CANCEL = 0x8;
