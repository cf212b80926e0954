// node:http2, loaded when portico first opens a connection to an HTTP/2 pod (client.ts;
// the client-facing side is portico's own engine, wire/): the module and its nghttp2
// binding cost about 9 MB per process, and many deployments never talk HTTP/2 to a pod.
// Not an ESM import, which would load it with portico.
import type * as Http2 from 'node:http2';

let loaded: typeof Http2 | undefined;

export function nodeHttp2(): typeof Http2 {
  return (loaded ??= process.getBuiltinModule('node:http2'));
}

// The protocol's own number (RFC 9113 section 7), usable without loading the module.
export const NGHTTP2_CANCEL = 0x8;
