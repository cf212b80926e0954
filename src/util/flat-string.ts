// V8 keeps `a + b` (and a template literal) as a tree of its pieces, 32 bytes a node,
// and a slice as a view that keeps its whole parent alive (a YAML value holds the
// file it was read from). Strings kept as long as an object or route lives are made
// one flat copy of their own instead.

/** `text` as one flat string that shares nothing. */
export function flatString(text: string): string {
  // Shorter strings are never trees or views: V8 copies them.
  return text.length < 13 ? text : (text + ' ').slice(0, -1);
}
