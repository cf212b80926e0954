// ctx.requestHeaders / ctx.responseHeaders are treated as immutable: a middleware
// replaces the list instead of pushing into it, so a list precomputed once per route
// can be handed to every request without copying.

export type HeaderList = readonly (readonly [string, string])[];

/** `current` plus `extra`; an entry of `extra` replaces same-name entries of `current`. */
export function withHeaders(current: [string, string][] | undefined, extra: HeaderList): [string, string][] {
  if (current === undefined || current.length === 0) return extra as [string, string][];
  const out: [string, string][] = [];
  for (const entry of current) {
    const lower = entry[0].toLowerCase();
    if (!extra.some((e) => e[0].toLowerCase() === lower)) out.push(entry);
  }
  for (const entry of extra) out.push(entry as [string, string]);
  return out;
}
