// Response headers as undici hands them to a dispatcher's handler: lowercase names,
// repeated ones as arrays (src/http1/client-connection.ts; src/proxy/headers.ts makes one
// from a pod's raw pairs when a policy changes the response's headers).
import { lowerName } from './header-names.ts';

export type HeaderRecord = Record<string, string | string[]>;

/**
 * The prototype of header records: empty, and itself without Object.prototype, so a pod's
 * "constructor" or "__proto__" header is just a header. Object.create(null) would do that
 * too, but V8 keeps such objects in dictionary mode: each header a hash insert, each for-in
 * a sort. Made from this one, records get hidden classes, which the responses of a pod
 * that sends the same headers each time share.
 */
const HEADER_RECORD_PROTOTYPE: object = Object.freeze(Object.create(null));

/** The record of flat [name, value, ...] pairs. */
export function headerRecord(raw: readonly string[]): HeaderRecord {
  const out = Object.create(HEADER_RECORD_PROTOTYPE) as HeaderRecord;
  for (let i = 0; i < raw.length; i += 2) {
    const name = lowerName(raw[i]!);
    const value = raw[i + 1]!;
    const prev = out[name];
    if (prev === undefined) out[name] = value;
    else if (typeof prev === 'string') out[name] = [prev, value];
    else prev.push(value);
  }
  return out;
}
