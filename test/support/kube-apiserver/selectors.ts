// Label and field selectors with the real server's grammar and semantics
// (k8s.io/apimachinery/pkg/labels and pkg/fields).
import { errors } from './status.ts';
import type { ResourceKind } from './kinds.ts';
import type { KubeObj } from './store.ts';

export type Matcher = (obj: KubeObj) => boolean;

type Requirement =
  | { key: string; op: 'exists' | '!exists' }
  | { key: string; op: '=' | '!='; value: string }
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'gt' | 'lt'; value: number };

const KEY = String.raw`(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?`;
const VALUE = String.raw`(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?`;
const EXISTS = new RegExp(`^(${KEY})$`);
const NOT_EXISTS = new RegExp(`^!\\s*(${KEY})$`);
const EQUALITY = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`);
const SET = new RegExp(`^(${KEY})\\s+(in|notin)\\s*\\(([^()]*)\\)$`);
const ORDER = new RegExp(`^(${KEY})\\s*(>|<)\\s*(-?\\d+)$`);
const VALUE_ONLY = new RegExp(`^${VALUE}$`);

/** Splits on commas outside parentheses: "a in (x,y),b" -> ["a in (x,y)", "b"]. */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')') depth--;
    else if (s[i] === ',' && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

function parseRequirement(raw: string): Requirement {
  const part = raw.trim();
  let m: RegExpExecArray | null;
  if ((m = NOT_EXISTS.exec(part))) return { key: m[1]!, op: '!exists' };
  if ((m = SET.exec(part))) {
    const values = m[3]!.split(',').map((v) => v.trim());
    if (values.some((v) => !VALUE_ONLY.test(v))) throw errors.badRequest(`unable to parse requirement: invalid label value in "${part}"`);
    return { key: m[1]!, op: m[2] as 'in' | 'notin', values };
  }
  if ((m = ORDER.exec(part))) return { key: m[1]!, op: m[2] === '>' ? 'gt' : 'lt', value: Number(m[3]) };
  if ((m = EQUALITY.exec(part))) return { key: m[1]!, op: m[2] === '!=' ? '!=' : '=', value: m[3]! };
  if ((m = EXISTS.exec(part))) return { key: m[1]!, op: 'exists' };
  throw errors.badRequest(`unable to parse requirement: found '${part}', expected: a label selector requirement`);
}

function matchesRequirement(labels: Record<string, string>, r: Requirement): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  switch (r.op) {
    case 'exists': return has;
    case '!exists': return !has;
    case '=': return has && value === r.value;
    case '!=': return !has || value !== r.value;
    case 'in': return has && r.values.includes(value!);
    case 'notin': return !has || !r.values.includes(value!);
    case 'gt': return has && /^-?\d+$/.test(value!) && Number(value) > r.value;
    case 'lt': return has && /^-?\d+$/.test(value!) && Number(value) < r.value;
  }
}

/** Parses a labelSelector query value; an empty selector matches everything. Throws a 400 ApiError. */
export function parseLabelSelector(selector: string | null | undefined): Matcher {
  if (!selector || !selector.trim()) return () => true;
  const requirements = splitTopLevel(selector).map(parseRequirement);
  return (obj) => {
    const labels = (obj.metadata.labels ?? {}) as Record<string, string>;
    return requirements.every((r) => matchesRequirement(labels, r));
  };
}

/** Splits on unescaped separators, as fields.ParseSelector does ("\," and "\=" are literal). */
function splitEscaped(s: string, sep: string): string[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length) {
      current += c + s[i + 1];
      i++;
    } else if (c === sep) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts;
}

const unescape = (s: string) => s.replace(/\\(.)/g, '$1');

function readPath(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const segment of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = (cur as Record<string, unknown>)[segment];
  }
  return cur === undefined || cur === null ? '' : String(cur);
}

/** Parses a fieldSelector for a resource; unsupported fields are a 400 as on the real server. */
export function parseFieldSelector(selector: string | null | undefined, resource: ResourceKind): Matcher {
  if (!selector || !selector.trim()) return () => true;
  const fields: Record<string, string> = { 'metadata.name': 'metadata.name', 'metadata.namespace': 'metadata.namespace', ...resource.extraFields };
  const terms = splitEscaped(selector, ',').map((term) => {
    const m = /^([^!=]+?)\s*(==|=|!=)\s*(.*)$/s.exec(term.trim());
    if (!m) throw errors.badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
    const field = m[1]!.trim();
    const path = fields[field];
    if (!path) throw errors.badRequest(`field label not supported: ${field}`);
    return { path, negate: m[2] === '!=', value: unescape(m[3]!) };
  });
  return (obj) => terms.every((t) => (readPath(obj, t.path) === t.value) !== t.negate);
}
