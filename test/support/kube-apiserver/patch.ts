// The three patch formats the API server accepts over JSON:
// - JSON Patch (RFC 6902), application/json-patch+json
// - JSON Merge Patch (RFC 7386), application/merge-patch+json
// - strategic merge patch, treated here as a merge patch (no patch-merge keys: lists are replaced)
import { ApiError, errors } from './status.ts';

export const PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json'] as const;
export type PatchType = (typeof PATCH_TYPES)[number];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A patch that parsed but cannot be applied: the real server answers 422. */
function unprocessable(message: string): ApiError {
  return new ApiError(422, 'Invalid', message);
}

export function applyPatch(target: unknown, patchType: PatchType, patch: unknown): unknown {
  if (patchType === 'application/json-patch+json') return applyJsonPatch(target as Json, patch);
  return mergePatch(target as Json, patch as Json, patchType === 'application/strategic-merge-patch+json');
}

export function mergePatch(target: Json, patch: Json, strategic = false): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    // Strategic-merge directives ($patch, $retainKeys, $setElementOrder/...) are not modelled.
    if (strategic && key.startsWith('$')) continue;
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key] ?? null, value, strategic);
  }
  return result;
}

function parsePointer(pointer: unknown): string[] {
  if (typeof pointer !== 'string' || (pointer !== '' && !pointer.startsWith('/'))) throw errors.badRequest(`invalid JSON pointer: ${JSON.stringify(pointer)}`);
  if (pointer === '') return [];
  return pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function arrayIndex(arr: Json[], token: string, forAdd: boolean): number {
  if (forAdd && token === '-') return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw unprocessable(`invalid array index: ${token}`);
  const i = Number(token);
  if (i > arr.length || (!forAdd && i === arr.length)) throw unprocessable(`array index out of bounds: ${token}`);
  return i;
}

/** Parent container and last token of a path; the document root has no parent. */
function locate(doc: Json, tokens: string[], op: string): { parent: JsonObject | Json[]; last: string } {
  let cur: Json = doc;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(cur, token, false)]!;
    else if (isObject(cur) && Object.hasOwn(cur, token)) cur = cur[token]!;
    else throw unprocessable(`${op} operation does not apply: doc is missing path: /${tokens.join('/')}`);
  }
  if (!Array.isArray(cur) && !isObject(cur)) throw unprocessable(`${op} operation does not apply: doc is missing path: /${tokens.join('/')}`);
  return { parent: cur, last: tokens[tokens.length - 1]! };
}

function getAt(doc: Json, tokens: string[], op: string): Json {
  if (tokens.length === 0) return doc;
  const { parent, last } = locate(doc, tokens, op);
  if (Array.isArray(parent)) return parent[arrayIndex(parent, last, false)]!;
  if (!Object.hasOwn(parent, last)) throw unprocessable(`${op} operation does not apply: doc is missing key: /${tokens.join('/')}`);
  return parent[last]!;
}

function removeAt(doc: Json, tokens: string[], op: string): Json {
  const { parent, last } = locate(doc, tokens, op);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, last, false), 1)[0]!;
  if (!Object.hasOwn(parent, last)) throw unprocessable(`${op} operation does not apply: doc is missing key: /${tokens.join('/')}`);
  const old = parent[last]!;
  delete parent[last];
  return old;
}

function addAt(doc: Json, tokens: string[], value: Json, op: string): Json {
  if (tokens.length === 0) return value;
  const { parent, last } = locate(doc, tokens, op);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true), 0, value);
  else parent[last] = value;
  return doc;
}

function applyJsonPatch(target: Json, patch: unknown): Json {
  if (!Array.isArray(patch)) throw errors.badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let doc = structuredClone(target);
  for (const operation of patch as Record<string, unknown>[]) {
    if (!isObject(operation as Json)) throw errors.badRequest('json patch: each operation must be an object');
    const op = operation.op;
    const path = parsePointer(operation.path);
    switch (op) {
      case 'add':
        if (!('value' in operation)) throw errors.badRequest('json patch: add operation has no value');
        doc = addAt(doc, path, structuredClone(operation.value as Json), 'add');
        break;
      case 'remove':
        if (path.length === 0) throw unprocessable('remove operation does not apply: cannot remove the document root');
        removeAt(doc, path, 'remove');
        break;
      case 'replace':
        if (!('value' in operation)) throw errors.badRequest('json patch: replace operation has no value');
        if (path.length === 0) doc = structuredClone(operation.value as Json);
        else {
          removeAt(doc, path, 'replace');
          doc = addAt(doc, path, structuredClone(operation.value as Json), 'replace');
        }
        break;
      case 'move': {
        const from = parsePointer(operation.from);
        if (path.length > from.length && from.every((t, i) => path[i] === t)) throw unprocessable('move operation does not apply: cannot move a value into itself');
        const value = removeAt(doc, from, 'move');
        doc = addAt(doc, path, value, 'move');
        break;
      }
      case 'copy': {
        const value = structuredClone(getAt(doc, parsePointer(operation.from), 'copy'));
        doc = addAt(doc, path, value, 'copy');
        break;
      }
      case 'test': {
        const actual = getAt(doc, path, 'test');
        if (!jsonEqual(actual, operation.value as Json)) throw unprocessable(`testing value /${path.join('/')} failed: test failed`);
        break;
      }
      default:
        throw errors.badRequest(`Unexpected kind: ${String(op)}`);
    }
  }
  return doc;
}

/** Deep equality of JSON values (key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bKeys = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return keys.length === bKeys.length && keys.every((k) => Object.hasOwn(bo, k) && jsonEqual(ao[k], bo[k]));
}
