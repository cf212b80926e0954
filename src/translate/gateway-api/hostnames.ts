// Gateway API hostnames: a listener's hostname and a route's hostnames intersect to
// the names the route serves on that listener. "*." covers one or more labels here
// (unlike Ingress, where it covers exactly one).

/** Whether a name (or wildcard) is covered by `wildcard` ("*.example.com"). */
function coveredBy(name: string, wildcard: string): boolean {
  const suffix = wildcard.slice(1); // ".example.com"
  const bare = name.startsWith('*.') ? name.slice(1) : name;
  return bare.length > suffix.length && bare.endsWith(suffix);
}

/**
 * The hostnames a route serves on a listener: "" for any host; an empty list when
 * they do not intersect (the route does not attach there).
 */
export function intersectHostnames(listener: string | undefined, route: readonly string[] | undefined): string[] {
  const l = listener?.toLowerCase() ?? '';
  const names = (route ?? []).map((h) => h.toLowerCase());
  if (names.length === 0) return [l];
  if (l === '') return [...new Set(names)];
  const out = new Set<string>();
  for (const name of names) {
    if (name === l) out.add(name);
    else if (l.startsWith('*.') && coveredBy(name, l)) out.add(name);
    else if (name.startsWith('*.') && coveredBy(l, name)) out.add(l);
  }
  return [...out];
}
