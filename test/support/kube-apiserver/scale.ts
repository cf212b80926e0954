// The scale subresource of Deployments and StatefulSets, as the real registries serve it:
// an autoscaling/v1 Scale built from the parent, whose writes change nothing but the
// parent's spec.replicas. A resourceVersion in the Scale is a precondition on the parent.
import type { ResourceKind } from './kinds.ts';
import { applyPatch, type PatchType } from './patch.ts';
import type { Registry, WriteResult } from './registry.ts';
import { ApiError, errors } from './status.ts';
import type { KubeObj } from './store.ts';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** A LabelSelector in query-parameter syntax, requirements sorted by key (metav1.LabelSelectorAsSelector(...).String()). */
export function selectorString(selector: unknown): string {
  if (!isObject(selector)) return '';
  const { matchLabels = {}, matchExpressions = [] } = selector as LabelSelector;
  const requirements: [string, string][] = Object.entries(matchLabels).map(([k, v]) => [k, `${k}=${v}`]);
  for (const { key, operator, values = [] } of matchExpressions) {
    const list = [...values].sort().join(',');
    if (operator === 'In') requirements.push([key, `${key} in (${list})`]);
    else if (operator === 'NotIn') requirements.push([key, `${key} notin (${list})`]);
    else if (operator === 'Exists') requirements.push([key, key]);
    else if (operator === 'DoesNotExist') requirements.push([key, `!${key}`]);
  }
  return requirements
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, text]) => text)
    .join(',');
}

/** The Scale of a workload. spec.replicas is omitted at 0 (omitempty), status.replicas never is. */
export function scaleOf(parent: KubeObj): Record<string, unknown> {
  const { name, namespace, uid, resourceVersion, creationTimestamp } = parent.metadata;
  const spec = isObject(parent.spec) ? parent.spec : {};
  const status = isObject(parent.status) ? parent.status : {};
  const replicas = typeof spec.replicas === 'number' ? spec.replicas : 0;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name, namespace, uid, resourceVersion, creationTimestamp },
    spec: replicas ? { replicas } : {},
    status: { replicas: typeof status.replicas === 'number' ? status.replicas : 0, selector: selectorString(spec.selector) },
  };
}

const SCALE_KIND = { group: 'autoscaling', kind: 'Scale' } as ResourceKind;

function invalidScale(name: string, field: string, problem: string): ApiError {
  return errors.invalid(SCALE_KIND, name, field, problem);
}

export function getScale(registry: Registry, r: ResourceKind, namespace: string | undefined, name: string): Record<string, unknown> {
  return scaleOf(registry.get(r, namespace, name));
}

/** PUT of a Scale: only spec.replicas is taken; metadata.resourceVersion (and uid) are preconditions. */
export function updateScale(registry: Registry, r: ResourceKind, namespace: string | undefined, name: string, body: unknown): WriteResult {
  if (!isObject(body)) throw errors.badRequest('the body of the request could not be decoded as a Scale');
  if (body.kind !== undefined && body.kind !== 'Scale') {
    throw errors.badRequest(`${String(body.kind)} in version "v1" cannot be handled as a Scale: the kind in the body does not match the kind of the URL`);
  }
  if (body.apiVersion !== undefined && body.apiVersion !== 'autoscaling/v1') {
    throw errors.badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (autoscaling/v1)`);
  }
  const meta = isObject(body.metadata) ? body.metadata : {};
  if (meta.name !== name) throw errors.badRequest(`the name of the object (${String(meta.name ?? '')}) does not match the name on the URL (${name})`);
  const spec = isObject(body.spec) ? body.spec : {};
  // A Scale without spec.replicas decodes as 0 on a real server.
  const replicas = spec.replicas ?? 0;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas)) {
    throw errors.badRequest(`Scale in version "v1" cannot be handled as a Scale: spec.replicas: expected an integer, got ${JSON.stringify(replicas)}`);
  }
  if (replicas < 0) throw invalidScale(name, 'spec.replicas', `Invalid value: ${replicas}: must be greater than or equal to 0`);
  const parent = registry.get(r, namespace, name);
  if (typeof meta.resourceVersion === 'string' && meta.resourceVersion && meta.resourceVersion !== parent.metadata.resourceVersion) {
    throw errors.conflict(r, name);
  }
  if (typeof meta.uid === 'string' && meta.uid && meta.uid !== parent.metadata.uid) {
    throw errors.conflict(r, name, `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${parent.metadata.uid}`);
  }
  const spec0 = isObject(parent.spec) ? parent.spec : {};
  const result = registry.update(r, namespace, name, { ...parent, spec: { ...spec0, replicas } });
  return { object: scaleOf(result.object as KubeObj), code: 200 };
}

/** PATCH of a Scale: the patch applies to the Scale the parent shows, then it is written like a PUT. */
export function patchScale(registry: Registry, r: ResourceKind, namespace: string | undefined, name: string, patchType: PatchType, patch: unknown): WriteResult {
  const patched = applyPatch(getScale(registry, r, namespace, name), patchType, patch);
  return updateScale(registry, r, namespace, name, patched);
}
