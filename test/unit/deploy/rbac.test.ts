// The Helm chart's RBAC is the exact set of permissions portico uses, no more:
// a change here must be deliberate (and match a change in what the code calls).
//   list/watch: src/kube/resources.ts (reflectors); get on a Service: --publish-service
//   PATCH ingresses/status: src/status/ingress-status.ts
//   PATCH gatewayclasses/gateways/httproutes/grpcroutes status: src/status/gateway-status.ts
//   POST/PATCH events: src/status/events.ts
//   GET/POST/PUT leases: src/kube/leader.ts
//   GET/PATCH deployments, statefulsets and their scale; GET/POST/PATCH leases: src/scale-to-zero/
//   list/watch cacheinvalidations: src/cache/invalidation-controller.ts; DELETE them, PUT their status, list
//   the own Service's endpointslices: src/status/cache-invalidation-status.ts, src/kube/service-pods.ts
//
// Helm is not a project dependency, so the templates are read without it: control
// lines ({{- if }}, {{- end }}) are dropped and helper includes expanded, which
// yields every rule any set of values could render. When a `helm` binary is on
// PATH (or $HELM names one), real renders with and without watchNamespace are
// checked too.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const CHART = fileURLToPath(new URL('../../../deploy/helm/portico/', import.meta.url));
const read = (file: string) => readFileSync(CHART + file, 'utf8');

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
interface RbacObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules: Rule[];
}

const READ = ['get', 'list', 'watch'];
/** "group/resource" -> verbs, for everything portico may do. */
const CLUSTER_SCOPED: Record<string, string[]> = {
  'networking.k8s.io/ingressclasses': READ,
  'gateway.networking.k8s.io/gatewayclasses': READ,
  'gateway.networking.k8s.io/gatewayclasses/status': ['patch'],
  '/namespaces': READ,
};
const NAMESPACED: Record<string, string[]> = {
  'networking.k8s.io/ingresses': READ,
  '/services': READ,
  '/secrets': READ,
  'discovery.k8s.io/endpointslices': READ,
  'networking.k8s.io/ingresses/status': ['patch'],
  '/events': ['create', 'patch'],
  'gateway.networking.k8s.io/gateways': READ,
  'gateway.networking.k8s.io/httproutes': READ,
  'gateway.networking.k8s.io/grpcroutes': READ,
  'gateway.networking.k8s.io/referencegrants': READ,
  'gateway.networking.k8s.io/gateways/status': ['patch'],
  'gateway.networking.k8s.io/httproutes/status': ['patch'],
  'gateway.networking.k8s.io/grpcroutes/status': ['patch'],
  'apps/deployments': ['get', 'patch'],
  'apps/statefulsets': ['get', 'patch'],
  'apps/deployments/scale': ['get', 'patch'],
  'apps/statefulsets/scale': ['get', 'patch'],
  'coordination.k8s.io/leases': ['create', 'get', 'patch'],
  'portico.dev/cacheinvalidations': ['delete', 'get', 'list', 'watch'],
  'portico.dev/cacheinvalidations/status': ['update'],
};
const LEADER_ELECTION: Record<string, string[]> = {
  'coordination.k8s.io/leases': ['create', 'get', 'update'],
};

/** Flattens rules to "group/resource" -> sorted verbs; a resource in two rules is an error. */
function verbsByResource(rules: Rule[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const rule of rules) {
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        const key = `${group}/${resource}`;
        assert.equal(out[key], undefined, `${key} appears in more than one rule`);
        out[key] = [...rule.verbs].sort();
      }
    }
  }
  return out;
}

const sorted = (m: Record<string, string[]>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, [...v].sort()]));

/** The bodies of the {{ define "name" }} blocks in _helpers.tpl. */
function helpers(): Map<string, string> {
  const out = new Map<string, string>();
  const re = /\{\{-? define "([^"]+)" -?\}\}\n?([\s\S]*?)\{\{-? end \}\}\n?(?=\s*(?:\{\{\/\*|\{\{-? define|$))/g;
  for (const m of read('templates/_helpers.tpl').matchAll(re)) out.set(m[1]!, m[2]!);
  return out;
}

/** Every branch of a template at once: control lines dropped, includes expanded, other expressions made placeholders. */
function expandAllBranches(template: string): string {
  const defs = helpers();
  const lines: string[] = [];
  for (const line of template.split('\n')) {
    const include = /^\s*\{\{-? include "([^"]+)" \. \| nindent (\d+) \}\}\s*$/.exec(line);
    if (include) {
      const body = defs.get(include[1]!);
      assert.ok(body !== undefined, `helper ${include[1]} is defined`);
      const pad = ' '.repeat(Number(include[2]));
      // Helpers made only of template logic (labels, names) become one placeholder entry.
      const text = body.includes('{{') && !body.includes('apiGroups') ? 'placeholder: x' : body.trimEnd();
      lines.push(...text.split('\n').map((l) => pad + l));
      continue;
    }
    if (/^\s*\{\{-?\s*(if|else|end|with|range)\b.*\}\}\s*$/.test(line)) continue;
    lines.push(line.replace(/\{\{[^}]*\}\}/g, 'x'));
  }
  return lines.join('\n');
}

function rbacObjects(yamlText: string): RbacObject[] {
  return parseAllDocuments(yamlText)
    .map((d) => {
      assert.deepEqual(d.errors, [], 'the template is valid YAML');
      return d.toJS() as RbacObject | null;
    })
    .filter((o): o is RbacObject => !!o && (o.kind === 'ClusterRole' || o.kind === 'Role'));
}

function noWildcards(objects: RbacObject[]): void {
  for (const o of objects) {
    for (const r of o.rules) {
      for (const field of [r.apiGroups, r.resources, r.verbs]) assert.ok(!field.includes('*'), `${o.kind} ${o.metadata.name}: no wildcard`);
    }
  }
}

describe('Helm chart RBAC (templates as written)', () => {
  test('the ClusterRole grants exactly the cluster-wide and namespaced permissions, nothing more', () => {
    const [clusterRole, ...rest] = rbacObjects(expandAllBranches(read('templates/clusterrole.yaml')));
    assert.equal(rest.length, 0);
    assert.equal(clusterRole!.kind, 'ClusterRole');
    assert.deepEqual(verbsByResource(clusterRole!.rules), sorted({ ...CLUSTER_SCOPED, ...NAMESPACED }));
    noWildcards([clusterRole!]);
  });

  test('the namespaced kinds leave the ClusterRole only when watchNamespace is set', () => {
    const text = read('templates/clusterrole.yaml');
    assert.match(text, /\{\{- if not \.Values\.watchNamespace \}\}\s*\n\s*\{\{- include "portico\.namespacedRules" \. \| nindent 2 \}\}\s*\n\s*\{\{- end \}\}/);
    assert.match(text, /\{\{- include "portico\.clusterRules" \. \| nindent 2 \}\}\n/, 'IngressClasses are always cluster-wide');
  });

  test('Roles: leader election on Leases in the release namespace; the namespaced kinds in the watched namespace', () => {
    const roles = rbacObjects(expandAllBranches(read('templates/role.yaml')));
    assert.equal(roles.length, 2);
    const [leader, watched] = roles as [RbacObject, RbacObject];
    assert.match(leader.metadata.name, /leader-election$/);
    // The Service read is pinned to the chart's own Service (only rendered when it lies outside the watched namespace).
    const serviceRule = leader.rules.filter((r) => r.resources.includes('services'));
    const ownService = (r: Rule) => r.resources.includes('services') || r.resources.includes('endpointslices');
    assert.deepEqual(verbsByResource(leader.rules.filter((r) => !ownService(r))), sorted(LEADER_ELECTION));
    // ...and its EndpointSlices (CacheInvalidation: the replicas that must apply one).
    assert.deepEqual(verbsByResource(leader.rules.filter((r) => r.resources.includes('endpointslices'))), { 'discovery.k8s.io/endpointslices': ['list'] });
    assert.equal(serviceRule.length, 1);
    assert.deepEqual(serviceRule[0]!.verbs, ['get']);
    assert.equal(serviceRule[0]!.resourceNames?.length, 1, 'only the chart\'s own Service');
    assert.deepEqual(verbsByResource(watched.rules), sorted(NAMESPACED));
    noWildcards(roles);
  });

  test('core v1 Events only: no events.k8s.io permissions', () => {
    for (const file of ['templates/clusterrole.yaml', 'templates/role.yaml', 'templates/_helpers.tpl']) assert.doesNotMatch(read(file), /events\.k8s\.io/);
  });
});

const helm = process.env.HELM ?? 'helm';
const helmWorks = spawnSync(helm, ['version'], { stdio: 'ignore' }).status === 0;

function render(values: string[]): RbacObject[] {
  const r = spawnSync(helm, ['template', 'rel', CHART, '--namespace', 'edge', ...values.flatMap((v) => ['--set', v])], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return rbacObjects(r.stdout);
}

describe('Helm chart RBAC (rendered by helm)', { skip: helmWorks ? false : 'no helm binary on PATH (set $HELM to use one)' }, () => {
  test('default values: one ClusterRole with everything, one Role for the Lease', () => {
    const objects = render([]);
    const clusterRole = objects.find((o) => o.kind === 'ClusterRole')!;
    assert.deepEqual(verbsByResource(clusterRole.rules), sorted({ ...CLUSTER_SCOPED, ...NAMESPACED }));
    const roles = objects.filter((o) => o.kind === 'Role');
    assert.deepEqual(roles.map((r) => [r.metadata.namespace, verbsByResource(r.rules)]), [['edge', sorted(LEADER_ELECTION)]]);
  });

  test('watchNamespace: the ClusterRole keeps only IngressClasses; a Role in that namespace has the rest', () => {
    const objects = render(['watchNamespace=apps']);
    const clusterRole = objects.find((o) => o.kind === 'ClusterRole')!;
    assert.deepEqual(verbsByResource(clusterRole.rules), sorted(CLUSTER_SCOPED));
    const byNamespace = new Map(objects.filter((o) => o.kind === 'Role').map((r) => [r.metadata.namespace, r]));
    assert.deepEqual(verbsByResource(byNamespace.get('apps')!.rules), sorted(NAMESPACED));
    assert.deepEqual(verbsByResource(byNamespace.get('edge')!.rules), sorted({ ...LEADER_ELECTION, '/services': ['get'], 'discovery.k8s.io/endpointslices': ['list'] }));
  });

  test('watchNamespace equal to the release namespace needs no extra Service read', () => {
    const objects = render(['watchNamespace=edge']);
    const leader = objects.find((o) => o.kind === 'Role' && o.metadata.name.endsWith('leader-election'))!;
    assert.deepEqual(verbsByResource(leader.rules), sorted(LEADER_ELECTION));
  });
});

describe('Helm chart values', () => {
  test('values.yaml covers exactly what values.schema.json describes, with the types it says', () => {
    const values = parseAllDocuments(read('values.yaml'))[0]!.toJS() as Record<string, unknown>;
    const schema = JSON.parse(read('values.schema.json')) as { properties: Record<string, { type?: string | string[]; enum?: unknown[]; properties?: Record<string, unknown> }> };
    assert.deepEqual(Object.keys(values).sort(), Object.keys(schema.properties).sort(), 'every value has a schema entry and no more');
    const typeOf = (v: unknown) => (Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : v === null ? 'null' : typeof v);
    for (const [key, rule] of Object.entries(schema.properties)) {
      const value = values[key];
      if (rule.enum) assert.ok(rule.enum.includes(value), `${key}: ${JSON.stringify(value)} is one of ${JSON.stringify(rule.enum)}`);
      if (rule.type) assert.ok([rule.type].flat().includes(typeOf(value)), `${key}: ${typeOf(value)} is ${JSON.stringify(rule.type)}`);
      if (rule.properties && value && typeof value === 'object') {
        for (const sub of Object.keys(value)) assert.ok(sub in rule.properties, `${key}.${sub} is in the schema`);
      }
    }
  });

  test('the preStop hook is the native sleep action (the image has no shell), and new templates are off by default', () => {
    const values = parseAllDocuments(read('values.yaml'))[0]!.toJS() as { lifecycle: unknown; serviceMonitor: { enabled: boolean }; networkPolicy: { enabled: boolean } };
    assert.deepEqual(values.lifecycle, { preStop: { sleep: { seconds: 5 } } });
    assert.equal(values.serviceMonitor.enabled, false);
    assert.equal(values.networkPolicy.enabled, false);
    assert.match(read('templates/servicemonitor.yaml'), /^\{\{- if \.Values\.serviceMonitor\.enabled \}\}/);
    assert.match(read('templates/networkpolicy.yaml'), /^\{\{- if \.Values\.networkPolicy\.enabled \}\}/);
  });
});
