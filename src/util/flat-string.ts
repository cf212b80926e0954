// V8 keeps `a + b` (and a template literal) as a tree of its pieces, 32 bytes a node,
// and a slice as a view that keeps its whole parent alive (a YAML value holds the
// file it was read from). Strings kept as long as an object or route lives are made
// one flat copy of their own instead.

/** `text` as one flat string that shares nothing. */
export function flatString(text: string): string {
  // Shorter strings are never trees or views: V8 copies them.
  if (text.length < 13) return text;
  // JSON.parse makes a new sequential string (a slice such as `(text + ' ').slice(0, -1)`
  // would be a 32-byte view of a private copy: 4.5 MB at 10,000 Ingresses). Lossless:
  // lone surrogates are escaped by stringify and restored by parse.
  return JSON.parse(JSON.stringify(text)) as string;
}

/** Values interned so far; cleared when full, so that churn (names, addresses) cannot grow it. */
const interned = new Map<string, string>();
const MAX_INTERNED = 20_000;

/**
 * `text` as one flat string shared with every other value interned equal to it: for
 * fields whose values repeat across objects (namespaces, Service and port names, path
 * types, protocols, label keys). At 10,000 Ingresses a namespace was stored 30,000
 * times and "Prefix" 20,000 times, one copy each.
 */
export function internString(text: string): string {
  let shared = interned.get(text);
  if (shared === undefined) {
    if (interned.size >= MAX_INTERNED) interned.clear();
    shared = flatString(text);
    interned.set(shared, shared);
  }
  return shared;
}
