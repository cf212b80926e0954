// Gateway API match conditions besides host and path (method, headers, query
// parameters), compiled once per route: a Guard is built when the table is, and
// test() reads the raw request without building header objects. Ingress routes have
// no conditions and never reach this code.
import type { RouteConditions, ValueMatch } from '../model/config.ts';

/** What a guard reads from a request: the method and the headers as received. */
export interface MatchRequest {
  readonly method?: string | null;
  /** Flat [name, value, name, value...] */
  readonly rawHeaders: readonly string[];
}

interface CompiledMatch {
  readonly name: string;
  readonly exact: string | undefined;
  readonly regex: RegExp | undefined;
}

/** Anchored: Gateway API regular expressions match the whole value, as in Envoy. */
export function compileRegex(pattern: string): RegExp {
  return new RegExp(`^(?:${pattern})$`);
}

function compileMatch(m: ValueMatch, lowerName: boolean): CompiledMatch {
  const name = lowerName ? m.name.toLowerCase() : m.name;
  return m.type === 'RegularExpression' ? { name, exact: undefined, regex: compileRegex(m.value) } : { name, exact: m.value, regex: undefined };
}

function accepts(m: CompiledMatch, value: string | undefined): boolean {
  if (value === undefined) return false;
  return m.regex === undefined ? value === m.exact : m.regex.test(value);
}

/** The header's value; repeated headers are joined with ",", as one list (RFC 9110 section 5.3). */
export function headerValue(raw: readonly string[], lowerName: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== lowerName.length || name.toLowerCase() !== lowerName) continue;
    value = value === undefined ? raw[i + 1]! : `${value},${raw[i + 1]!}`;
  }
  return value;
}

function decode(text: string): string {
  const spaced = text.includes('+') ? text.replaceAll('+', ' ') : text;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/** The first value of a query parameter ("?a=1&b=2"); names are case-sensitive. */
export function queryValue(query: string, name: string): string | undefined {
  let start = query.charCodeAt(0) === 0x3f ? 1 : 0;
  while (start < query.length) {
    let end = query.indexOf('&', start);
    if (end === -1) end = query.length;
    const eq = query.indexOf('=', start);
    const nameEnd = eq === -1 || eq > end ? end : eq;
    if (decode(query.slice(start, nameEnd)) === name) return nameEnd === end ? '' : decode(query.slice(nameEnd + 1, end));
    start = end + 1;
  }
  return undefined;
}

export class Guard {
  private readonly method: string | undefined;
  private readonly headers: readonly CompiledMatch[];
  private readonly query: readonly CompiledMatch[];

  constructor(conditions: RouteConditions) {
    this.method = conditions.method;
    this.headers = conditions.headers.map((m) => compileMatch(m, true));
    this.query = conditions.query.map((m) => compileMatch(m, false));
  }

  test(req: MatchRequest | undefined, query: string): boolean {
    if (this.method !== undefined && req?.method !== this.method) return false;
    if (this.headers.length > 0) {
      if (req === undefined) return false;
      for (const m of this.headers) if (!accepts(m, headerValue(req.rawHeaders, m.name))) return false;
    }
    for (const m of this.query) if (!accepts(m, queryValue(query, m.name))) return false;
    return true;
  }
}

/** A guard for `conditions`, or undefined when there is nothing to check. */
export function guardOf(conditions: RouteConditions | undefined): Guard | undefined {
  if (conditions === undefined) return undefined;
  if (conditions.method === undefined && conditions.headers.length === 0 && conditions.query.length === 0) return undefined;
  return new Guard(conditions);
}
