// One manifest file -> the routing objects in it, with a file:line for everything
// wrong. *.yaml/*.yml hold any number of YAML documents; *.json holds one object.
// Either may be a List (kind: List, or an API list such as IngressList) of objects.
import { LineCounter, parseAllDocuments, parseDocument, isMap, isSeq, type Document, type Node } from 'yaml';
import type { KubeObject } from '../model/k8s.ts';
import { isCacheInvalidation, type CacheInvalidation } from '../cache/invalidation-resource.ts';
import { sanitize, type SanitizeResult } from './sanitize.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { extname } = process.getBuiltinModule('node:path');

export interface ManifestError {
  /** The path as given to parseManifestFile. */
  file: string;
  /** 1-based line where the document or object starts, or where a syntax error is. */
  line?: number;
  message: string;
  /** Set when a well-identified object was rejected: a source may keep serving its last good version. */
  ref?: SanitizeResult['ref'];
}

export interface ParsedManifestFile {
  objects: KubeObject[];
  /** Line of each object in `objects` (same index). */
  lines: (number | undefined)[];
  errors: ManifestError[];
  /** Objects of kinds portico does not read. */
  ignored: number;
  /** CacheInvalidation objects (not routing input: applied to the cache once each, src/cache/manifest-invalidations.ts). */
  invalidations: { object: CacheInvalidation; line: number | undefined }[];
  /**
   * The file could not be read as a whole (a YAML or JSON syntax error): `objects` may
   * be incomplete, so a source should keep serving what it last read from this file.
   */
  failed: boolean;
}

export const MANIFEST_EXTENSIONS: readonly string[] = ['.yaml', '.yml', '.json'];

export function isManifestFile(path: string): boolean {
  return MANIFEST_EXTENSIONS.includes(extname(path).toLowerCase());
}

/** A raw object and the line it starts on. */
interface Located {
  value: unknown;
  line: number | undefined;
}

export function parseManifestFile(path: string, text: string): ParsedManifestFile {
  const result: ParsedManifestFile = { objects: [], lines: [], errors: [], ignored: 0, invalidations: [], failed: false };
  const ext = extname(path).toLowerCase();
  let located: Located[];
  if (ext === '.json') located = readJson(path, text, result);
  else if (ext === '.yaml' || ext === '.yml') located = readYaml(path, text, result);
  else {
    result.errors.push({ file: path, message: `not a manifest file (expected ${MANIFEST_EXTENSIONS.join(', ')})` });
    result.failed = true;
    return result;
  }
  for (const item of located) addObject(path, item, result);
  return result;
}

function addObject(file: string, { value, line }: Located, result: ParsedManifestFile): void {
  if (isCacheInvalidation(value)) {
    result.invalidations.push({ object: value, line });
    return;
  }
  const o = value as { apiVersion?: unknown; kind?: unknown } | null;
  if (o?.kind === 'CacheInvalidation' && o.apiVersion === 'portico.dev/v1alpha1') {
    result.errors.push({ file, line, message: 'CacheInvalidation: metadata.name is required' });
    return;
  }
  const sanitized = sanitize(value);
  if (sanitized.object) {
    result.objects.push(sanitized.object);
    result.lines.push(line);
  } else if (sanitized.ignored) {
    result.ignored++;
  } else {
    result.errors.push({ file, line, message: sanitized.error ?? 'invalid object', ...(sanitized.ref ? { ref: sanitized.ref } : {}) });
  }
}

// ---- YAML ----

function readYaml(file: string, text: string, result: ParsedManifestFile): Located[] {
  const lineCounter = new LineCounter();
  // Errors found at end of input (an unclosed bracket) point at the last line with content, not past it.
  const end = text.trimEnd().length;
  const lineAt = (offset: number) => lineCounter.linePos(Math.min(offset, Math.max(0, end - 1))).line;
  const out: Located[] = [];
  // Documents parse independently: one broken document leaves the others readable.
  for (const doc of parseAllDocuments(text, { lineCounter })) {
    if (doc.errors.length) {
      result.failed = true;
      // The first error is the cause; the ones after it are mostly its echoes.
      const first = doc.errors[0]!;
      const more = doc.errors.length - 1;
      result.errors.push({ file, line: lineAt(first.pos[0]), message: yamlReason(first.message) + (more > 0 ? ` (${more} more error${more > 1 ? 's' : ''} after it in this document)` : '') });
      continue;
    }
    const contents = doc.contents as Node | null;
    if (contents === null || (contents as { value?: unknown }).value === null) continue; // empty document ("---" alone, comments)
    const line = lineAt(contents.range?.[0] ?? doc.range[0]);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      // Unresolved aliases and alias bombs only show up when building values.
      result.failed = true;
      result.errors.push({ file, line, message: (err as Error).message });
      continue;
    }
    out.push(...expandList(value, line, (i) => itemLine(doc, i, lineAt)));
  }
  return out;
}

/** "Map keys must be unique at line 2, column 1:\n\n<excerpt>" -> "Map keys must be unique" (the line is reported separately). */
function yamlReason(message: string): string {
  return message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '').replace(/:$/, '');
}

/** Line where item `index` of the document's `items` list starts. */
function itemLine(doc: Document, index: number, lineAt: (offset: number) => number): number | undefined {
  const contents = doc.contents;
  if (!isMap(contents)) return undefined;
  const items = contents.get('items', true);
  if (!isSeq(items)) return undefined;
  const node = items.items[index] as Node | undefined;
  const offset = node?.range?.[0];
  return offset === undefined ? undefined : lineAt(offset);
}

// ---- JSON ----

function readJson(file: string, text: string, result: ParsedManifestFile): Located[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    result.failed = true;
    const { line, reason } = jsonError(text, (err as Error).message);
    result.errors.push({ file, line, message: reason });
    return [];
  }
  // JSON.parse gives no positions; parse again as YAML (a superset of JSON) only to find item lines.
  let positions: { doc: Document; lineAt: (offset: number) => number } | undefined;
  const lines = (index: number): number | undefined => {
    if (!positions) {
      const lineCounter = new LineCounter();
      positions = { doc: parseDocument(text, { lineCounter }), lineAt: (o) => lineCounter.linePos(o).line };
    }
    return itemLine(positions.doc, index, positions.lineAt);
  };
  return expandList(value, 1, lines);
}

/** Line of a JSON.parse error: V8 says "(line 3 column 5)" or "at position 42". */
function jsonError(text: string, message: string): { line?: number; reason: string } {
  const reason = message.replace(/ in JSON at position \d+.*$/, '').replace(/, "[^"]*\.\.\."? is not valid JSON$/, '');
  const lineCol = /\(line (\d+) column \d+\)/.exec(message);
  if (lineCol) return { line: Number(lineCol[1]), reason };
  const position = /at position (\d+)/.exec(message);
  if (position) return { line: text.slice(0, Number(position[1])).split('\n').length, reason };
  return { reason: message };
}

// ---- Lists ----

function isList(value: unknown): value is { apiVersion?: unknown; kind: string; items: unknown[] } {
  if (typeof value !== 'object' || value === null) return false;
  const { kind, items } = value as { kind?: unknown; items?: unknown };
  return typeof kind === 'string' && kind.endsWith('List') && Array.isArray(items);
}

/**
 * A List becomes its items. Items of an API list (IngressList...) come without
 * apiVersion and kind: they are those of the list, without "List".
 */
function expandList(value: unknown, line: number | undefined, itemLineOf: (index: number) => number | undefined): Located[] {
  if (!isList(value)) return [{ value, line }];
  const itemKind = value.kind === 'List' ? undefined : value.kind.slice(0, -'List'.length);
  return value.items.map((item, i) => {
    let filled = item;
    if (itemKind && typeof item === 'object' && item !== null && !Array.isArray(item)) {
      const o = item as Record<string, unknown>;
      filled = { apiVersion: value.apiVersion, kind: itemKind, ...o };
    }
    return { value: filled, line: itemLineOf(i) ?? line };
  });
}
