// The verbs on top of the store, with the real API server's rules: server-set metadata,
// optimistic concurrency, the status subresource split, generation, generateName,
// finalizers, consistent paginated lists. Used by the HTTP layer and by the test helpers.
import { randomUUID } from 'node:crypto';
import { findByKind, groupVersion, KINDS, type ResourceKind } from './kinds.ts';
import { applyPatch, jsonEqual, type PatchType } from './patch.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';
import { ApiError, errors } from './status.ts';
import { objectKey, Store, type KubeObj, type ObjectMeta } from './store.ts';

export interface ListOptions {
  labelSelector?: string | null;
  fieldSelector?: string | null;
  limit?: string | null;
  continue?: string | null;
  resourceVersion?: string | null;
  resourceVersionMatch?: string | null;
}

export interface ListBody {
  kind: string;
  apiVersion: string;
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: Record<string, unknown>[];
}

export interface WriteResult {
  /** The object, or for most deletes a Status of status "Success". */
  object: KubeObj | Record<string, unknown>;
  /** 201 for a create (also create-on-update), 202 for a delete that waits on finalizers, else 200. */
  code: number;
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const GENERATED_CHARS = 'bcdfghjklmnpqrstvwxz2456789';
const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const NAMESPACE_KIND = findByKind('Namespace')!;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Kubernetes Time: RFC 3339 at second precision. */
function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** What generation tracks: everything except metadata and status. */
function specOf(obj: KubeObj): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

function withoutResourceVersion(obj: KubeObj): KubeObj {
  const { resourceVersion: _rv, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

interface ContinueToken {
  rv: number;
  start: string;
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64');
}

function decodeContinue(token: string): ContinueToken {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { v?: string; rv?: number; start?: string };
    if (parsed.v !== 'meta.k8s.io/v1' || !Number.isInteger(parsed.rv) || typeof parsed.start !== 'string') throw new Error('bad shape');
    return { rv: parsed.rv!, start: parsed.start };
  } catch {
    throw errors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }
}

/** What DELETE answers for kinds that do not return the deleted object. */
function deletedStatus(r: ResourceKind, obj: KubeObj): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    details: { name: obj.metadata.name, ...(r.group ? { group: r.group } : {}), kind: r.plural, uid: obj.metadata.uid },
  };
}

function parseResourceVersion(value: string): number {
  if (!/^\d+$/.test(value)) throw errors.badRequest(`invalid resource version: ${JSON.stringify(value)}`);
  return Number(value);
}

export class Registry {
  readonly store: Store;

  constructor(store: Store) {
    this.store = store;
    for (const ns of DEFAULT_NAMESPACES) this.ensureNamespace(ns);
  }

  /** Any namespace exists: the first write into one creates its Namespace object. */
  private ensureNamespace(namespace: string): void {
    if (this.store.get(NAMESPACE_KIND, namespace)) return;
    this.store.put(NAMESPACE_KIND, namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: namespace, uid: randomUUID(), creationTimestamp: now(), labels: { 'kubernetes.io/metadata.name': namespace } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    });
  }

  get(r: ResourceKind, namespace: string | undefined, name: string): KubeObj {
    const obj = this.store.get(r, objectKey(r, namespace, name));
    if (!obj) throw errors.notFound(r, name);
    return obj;
  }

  list(r: ResourceKind, namespace: string | undefined, q: ListOptions): ListBody {
    const labels = parseLabelSelector(q.labelSelector);
    const fields = parseFieldSelector(q.fieldSelector, r);
    const rvParam = q.resourceVersion ?? '';
    const match = q.resourceVersionMatch ?? '';
    let limit = q.limit ? Number(q.limit) : 0;
    if (!Number.isInteger(limit) || limit < 0) throw errors.badRequest(`invalid limit: ${q.limit}`);
    if (match && !rvParam) throw errors.badRequest('resourceVersionMatch is forbidden unless resourceVersion is provided');
    if (match && match !== 'Exact' && match !== 'NotOlderThan') throw errors.badRequest(`resourceVersionMatch: Unsupported value: "${match}"`);

    let listRv: number;
    let start = '';
    let source: [string, KubeObj][];
    if (q.continue) {
      if (rvParam) throw errors.badRequest('specifying resource version is not allowed when using continue');
      const token = decodeContinue(q.continue);
      if (token.rv < this.store.compactedRevision) {
        throw errors.expired(
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      }
      listRv = token.rv;
      start = token.start;
      source = this.store.listAt(r, listRv);
    } else if (rvParam === '' || rvParam === '0') {
      // "0" is served from the watch cache on a real server, which ignores limit.
      if (rvParam === '0') limit = 0;
      listRv = this.store.resourceVersion;
      source = this.store.list(r);
    } else {
      const rv = parseResourceVersion(rvParam);
      if (rv > this.store.resourceVersion) throw errors.tooLargeResourceVersion(rv, this.store.resourceVersion);
      // Legacy rule: a non-zero resourceVersion with a limit and no match is Exact.
      const exact = match === 'Exact' || (!match && limit > 0);
      listRv = exact ? rv : this.store.resourceVersion;
      source = exact ? this.store.listAt(r, rv) : this.store.list(r);
    }

    const prefix = r.namespaced && namespace ? `${namespace}/` : '';
    const matching = source.filter(([key, obj]) => key.startsWith(prefix) && key >= start && labels(obj) && fields(obj));
    const page = limit > 0 ? matching.slice(0, limit) : matching;
    const metadata: ListBody['metadata'] = { resourceVersion: String(listRv) };
    if (page.length < matching.length) {
      metadata.continue = encodeContinue(listRv, `${page[page.length - 1]![0]}\u0000`);
      if (!q.labelSelector && !q.fieldSelector) metadata.remainingItemCount = matching.length - page.length;
    }
    return {
      kind: `${r.kind}List`,
      apiVersion: groupVersion(r),
      metadata,
      // List items carry no apiVersion/kind on the wire.
      items: page.map(([, obj]) => {
        const { apiVersion: _a, kind: _k, ...item } = obj;
        return item;
      }),
    };
  }

  private checkBody(r: ResourceKind, body: unknown): KubeObj {
    if (!isObject(body)) throw errors.badRequest(`the body of the request could not be decoded as a ${r.kind}`);
    if (body.metadata !== undefined && !isObject(body.metadata)) throw errors.badRequest('metadata must be an object');
    if (body.kind !== undefined && body.kind !== r.kind) {
      throw errors.badRequest(`${String(body.kind)} in version "${r.version}" cannot be handled as a ${r.kind}: the kind in the body does not match the kind of the URL`);
    }
    if (body.apiVersion !== undefined && body.apiVersion !== groupVersion(r)) {
      throw errors.badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${groupVersion(r)})`);
    }
    const obj: KubeObj = { ...body, apiVersion: groupVersion(r), kind: r.kind, metadata: { ...((body.metadata as ObjectMeta | undefined) ?? {}) } };
    r.defaults?.(obj);
    return obj;
  }

  private checkNamespace(r: ResourceKind, obj: KubeObj, namespace: string | undefined): void {
    if (!r.namespaced) {
      delete obj.metadata.namespace;
      return;
    }
    if (obj.metadata.namespace && obj.metadata.namespace !== namespace) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    obj.metadata.namespace = namespace;
  }

  create(r: ResourceKind, namespace: string | undefined, body: unknown): WriteResult {
    const obj = this.checkBody(r, body);
    this.checkNamespace(r, obj, namespace);
    const meta = obj.metadata;
    if (meta.resourceVersion) throw new ApiError(500, 'InternalError', 'Internal error occurred: resourceVersion should not be set on objects to be created');
    if (!meta.name && meta.generateName) {
      for (let attempt = 0; attempt < 8 && !meta.name; attempt++) {
        let suffix = '';
        for (let i = 0; i < 5; i++) suffix += GENERATED_CHARS[Math.floor(Math.random() * GENERATED_CHARS.length)];
        const candidate = `${meta.generateName}${suffix}`;
        if (!this.store.get(r, objectKey(r, namespace, candidate))) meta.name = candidate;
      }
    }
    if (!meta.name) throw errors.invalid(r, '', 'metadata.name', 'Required value: name or generateName is required');
    if (meta.name.length > 253 || !NAME.test(meta.name)) {
      throw errors.invalid(r, meta.name, 'metadata.name', `Invalid value: "${meta.name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`);
    }
    const key = objectKey(r, namespace, meta.name);
    if (this.store.get(r, key)) throw errors.alreadyExists(r, meta.name);
    meta.uid = randomUUID();
    meta.creationTimestamp = now();
    meta.generation = 1;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (r.statusSubresource) obj.status = r.initialStatus?.() ?? {};
    if (r.namespaced) this.ensureNamespace(namespace!);
    return { object: this.store.put(r, key, obj).object, code: 201 };
  }

  update(r: ResourceKind, namespace: string | undefined, name: string, body: unknown, subresource?: 'status'): WriteResult {
    const incoming = this.checkBody(r, body);
    if (incoming.metadata.name !== name) {
      throw errors.badRequest(`the name of the object (${incoming.metadata.name ?? ''}) does not match the name on the URL (${name})`);
    }
    this.checkNamespace(r, incoming, namespace);
    const key = objectKey(r, namespace, name);
    const existing = this.store.get(r, key);
    if (!existing) {
      if (r.createOnUpdate && !subresource) {
        const { resourceVersion: _rv, ...metadata } = incoming.metadata;
        return this.create(r, namespace, { ...incoming, metadata });
      }
      throw errors.notFound(r, name);
    }
    const wantedRv = incoming.metadata.resourceVersion;
    if (wantedRv && wantedRv !== existing.metadata.resourceVersion) throw errors.conflict(r, name);
    if (incoming.metadata.uid && incoming.metadata.uid !== existing.metadata.uid) {
      throw errors.conflict(r, name, `Precondition failed: UID in precondition: ${incoming.metadata.uid}, UID in object meta: ${existing.metadata.uid}`);
    }

    let next: KubeObj;
    if (subresource === 'status') {
      next = { ...existing, status: incoming.status };
      if (incoming.status === undefined) delete next.status;
    } else {
      next = {
        ...incoming,
        metadata: {
          ...incoming.metadata,
          uid: existing.metadata.uid,
          creationTimestamp: existing.metadata.creationTimestamp,
          generation: existing.metadata.generation,
        },
      };
      // Only the server sets deletionTimestamp: keep the stored one, drop a client's.
      if (existing.metadata.deletionTimestamp) next.metadata.deletionTimestamp = existing.metadata.deletionTimestamp;
      else delete next.metadata.deletionTimestamp;
      if (r.statusSubresource) {
        if (existing.status === undefined) delete next.status;
        else next.status = existing.status;
      }
      if (!jsonEqual(specOf(existing), specOf(next))) next.metadata.generation = (existing.metadata.generation ?? 0) + 1;
    }
    // A write that changes nothing is not a write: no new resourceVersion, no event.
    if (jsonEqual(withoutResourceVersion(next), withoutResourceVersion(existing))) return { object: existing, code: 200 };
    // The last finalizer removed from an object being deleted completes the deletion.
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      this.store.delete(r, key);
      return { object: next, code: 200 };
    }
    return { object: this.store.put(r, key, next).object, code: 200 };
  }

  patch(r: ResourceKind, namespace: string | undefined, name: string, patchType: PatchType, patch: unknown, subresource?: 'status'): WriteResult {
    const existing = this.get(r, namespace, name);
    const patched = applyPatch(existing, patchType, patch);
    if (!isObject(patched) || !isObject(patched.metadata)) throw errors.invalid(r, name, 'metadata', 'Required value: the patched object has no metadata');
    // A resourceVersion in the patch is a precondition (it is compared by update()).
    return this.update(r, namespace, name, patched, subresource);
  }

  delete(r: ResourceKind, namespace: string | undefined, name: string, options?: unknown): WriteResult {
    const key = objectKey(r, namespace, name);
    const existing = this.get(r, namespace, name);
    const pre = isObject(options) && isObject(options.preconditions) ? (options.preconditions as { uid?: string; resourceVersion?: string }) : {};
    if (pre.uid && pre.uid !== existing.metadata.uid) {
      throw errors.conflict(r, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${existing.metadata.uid}`);
    }
    if (pre.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
      throw errors.conflict(
        r,
        name,
        `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${existing.metadata.resourceVersion}). The object might have been modified`,
      );
    }
    if (existing.metadata.finalizers?.length) {
      if (existing.metadata.deletionTimestamp) return { object: existing, code: 202 };
      const marked = { ...existing, metadata: { ...existing.metadata, deletionTimestamp: now(), deletionGracePeriodSeconds: 0 } };
      return { object: this.store.put(r, key, marked).object, code: 202 };
    }
    this.store.delete(r, key);
    return { object: r.returnDeletedObject ? existing : deletedStatus(r, existing), code: 200 };
  }

  deleteCollection(r: ResourceKind, namespace: string | undefined, q: ListOptions): ListBody {
    const { continue: _c, limit: _l, ...selection } = q;
    const listed = this.list(r, namespace, { ...selection, resourceVersion: '' });
    const items: Record<string, unknown>[] = [];
    for (const item of listed.items) {
      const meta = item.metadata as ObjectMeta;
      const removed = this.store.get(r, objectKey(r, meta.namespace, meta.name!))!;
      const result = this.delete(r, meta.namespace, meta.name!);
      items.push(result.code === 202 ? result.object : removed);
    }
    return { ...listed, items, metadata: { resourceVersion: String(this.store.resourceVersion) } };
  }

  /**
   * Test helper: create or replace an object as a controller would, status included,
   * with server-set metadata handled as on a real write.
   */
  apply(obj: KubeObj): KubeObj {
    const r = findByKind(obj.kind ?? '', obj.apiVersion);
    if (!r) throw new Error(`kube-apiserver: unknown kind ${obj.apiVersion}/${obj.kind}; known: ${KINDS.map((k) => `${groupVersion(k)}/${k.kind}`).join(', ')}`);
    const namespace = r.namespaced ? (obj.metadata?.namespace ?? 'default') : undefined;
    const name = obj.metadata?.name;
    if (!name) throw new Error('kube-apiserver: apply() needs metadata.name');
    const key = objectKey(r, namespace, name);
    const existing = this.store.get(r, key);
    const { resourceVersion: _rv, ...meta } = obj.metadata;
    const next: KubeObj = { ...structuredClone(obj), apiVersion: groupVersion(r), kind: r.kind, metadata: { ...structuredClone(meta) } };
    if (r.namespaced) next.metadata.namespace = namespace;
    else delete next.metadata.namespace;
    r.defaults?.(next);
    next.metadata.uid = existing?.metadata.uid ?? randomUUID();
    next.metadata.creationTimestamp = existing?.metadata.creationTimestamp ?? now();
    next.metadata.generation = !existing ? 1 : jsonEqual(specOf(existing), specOf(next)) ? existing.metadata.generation : (existing.metadata.generation ?? 0) + 1;
    if (existing && jsonEqual(withoutResourceVersion(next), withoutResourceVersion(existing))) return existing;
    if (r.namespaced) this.ensureNamespace(namespace!);
    return this.store.put(r, key, next).object;
  }

  /** Test helper: delete at once (finalizers are not waited for). Returns the removed object. */
  remove(r: ResourceKind, namespace: string | undefined, name: string): KubeObj | undefined {
    return this.store.delete(r, objectKey(r, r.namespaced ? (namespace ?? 'default') : undefined, name))?.prev;
  }
}
