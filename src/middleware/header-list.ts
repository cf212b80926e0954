// ctx.requestHeaders / ctx.responseHeaders are treated as immutable: a middleware
// replaces the list instead of pushing into it, so a list precomputed once per route
// can be handed to every request without copying.
//
// An entry replaces the same-name headers of the message ("set"), unless it says
// otherwise: "add" sends it besides them (a list header gains a value), "remove" drops
// them and sends nothing (Gateway API header modifiers).

export type HeaderMode = 'add' | 'remove';
export type HeaderEntry = [name: string, value: string, mode?: HeaderMode];
export type HeaderList = readonly (readonly [string, string, HeaderMode?])[];

/** Whether the message's own headers of this name are dropped because of `entry`. */
export function replacesOwn(entry: readonly [string, string, HeaderMode?]): boolean {
  return entry[2] !== 'add';
}

/** `current` plus `extra`; an entry of `extra` that sets or removes a name replaces same-name entries of `current`. */
export function withHeaders(current: HeaderEntry[] | undefined, extra: HeaderList): HeaderEntry[] {
  if (current === undefined || current.length === 0) return extra as HeaderEntry[];
  const out: HeaderEntry[] = [];
  for (const entry of current) {
    const lower = entry[0].toLowerCase();
    if (!extra.some((e) => replacesOwn(e) && e[0].toLowerCase() === lower)) out.push(entry);
  }
  for (const entry of extra) out.push(entry as HeaderEntry);
  return out;
}
