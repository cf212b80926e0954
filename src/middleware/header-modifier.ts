// Gateway API RequestHeaderModifier and ResponseHeaderModifier filters: set (replace),
// add (send besides the existing values) and remove headers, on the request to the pod
// and on the response from it. Names are case-insensitive. Not an annotation: the
// translation of HTTPRoute filters makes its config.
import type { Handler } from '../proxy/context.ts';
import { withHeaders, type HeaderList } from './header-list.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export interface HeaderEdits {
  readonly set: readonly (readonly [string, string])[];
  readonly add: readonly (readonly [string, string])[];
  /** Lowercase names */
  readonly remove: readonly string[];
}

export interface HeaderModifierConfig {
  readonly request?: HeaderEdits;
  readonly response?: HeaderEdits;
}

/** The edits as one header list (see header-list.ts), built once per route. */
function listOf(edits: HeaderEdits | undefined): HeaderList | undefined {
  if (edits === undefined) return undefined;
  const list: [string, string, ('add' | 'remove')?][] = [];
  for (const name of edits.remove) list.push([name, '', 'remove']);
  for (const [name, value] of edits.set) list.push([name, value]);
  for (const [name, value] of edits.add) list.push([name, value, 'add']);
  return list.length > 0 ? list : undefined;
}

export const headerModifierPolicy: PolicyDefinition<HeaderModifierConfig> = {
  name: 'header-modifier',
  annotations: [],
  order: 71,
  parse: () => undefined,
  create(config): Middleware {
    const request = listOf(config.request);
    const response = listOf(config.response);
    return (next: Handler): Handler => (ctx) => {
      if (request !== undefined) ctx.requestHeaders = withHeaders(ctx.requestHeaders, request);
      if (response !== undefined) ctx.responseHeaders = withHeaders(ctx.responseHeaders, response);
      next(ctx);
    };
  },
};
