// Legacy (aggregated-less) discovery documents, as a real server answers them for
// Accept: application/json: /api, /apis, /apis/<group>, /api/v1, /apis/<group>/<version>, /version.
import { ALL_VERBS, KINDS, STATUS_VERBS, type ResourceKind } from './kinds.ts';

export const KUBERNETES_VERSION = { major: '1', minor: '31', gitVersion: 'v1.31.0' };

export function versionInfo(): Record<string, string> {
  return {
    ...KUBERNETES_VERSION,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2024-08-13T07:28:49Z',
    goVersion: 'go1.22.5',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

function groups(): Map<string, string[]> {
  const byGroup = new Map<string, string[]>();
  for (const r of KINDS) {
    if (!r.group) continue;
    const versions = byGroup.get(r.group) ?? [];
    if (!versions.includes(r.version)) versions.push(r.version);
    byGroup.set(r.group, versions);
  }
  return byGroup;
}

function apiGroup(name: string, versions: string[]): Record<string, unknown> {
  const list = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions: list, preferredVersion: list[0] };
}

export function apiVersions(serverAddress: string): Record<string, unknown> {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

export function apiGroupList(hidden: ReadonlySet<string> = new Set()): Record<string, unknown> {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...groups()].filter(([name]) => !hidden.has(name)).map(([name, versions]) => apiGroup(name, versions)) };
}

export function apiGroupDocument(group: string): Record<string, unknown> | undefined {
  const versions = groups().get(group);
  return versions ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(group, versions) } : undefined;
}

function resourceEntries(r: ResourceKind): Record<string, unknown>[] {
  const main: Record<string, unknown> = {
    name: r.plural,
    singularName: r.singular,
    namespaced: r.namespaced,
    kind: r.kind,
    verbs: ALL_VERBS,
  };
  if (r.shortNames) main.shortNames = r.shortNames;
  const entries = [main];
  if (r.statusSubresource) entries.push({ name: `${r.plural}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: STATUS_VERBS });
  if (r.scaleSubresource) {
    entries.push({ name: `${r.plural}/scale`, singularName: '', namespaced: r.namespaced, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: STATUS_VERBS });
  }
  return entries;
}

export function apiResourceList(group: string, version: string): Record<string, unknown> | undefined {
  const kinds = KINDS.filter((r) => r.group === group && r.version === version);
  if (kinds.length === 0) return undefined;
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources: kinds.flatMap(resourceEntries) };
}

export function rootPaths(): Record<string, unknown> {
  const paths = ['/api', '/api/v1', '/apis', '/healthz', '/livez', '/readyz', '/version'];
  for (const [group, versions] of groups()) paths.push(`/apis/${group}`, ...versions.map((v) => `/apis/${group}/${v}`));
  return { paths: paths.sort() };
}
