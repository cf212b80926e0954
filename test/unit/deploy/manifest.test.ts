// deploy/portico.yaml is the chart rendered with its default values, and current; the
// renderer handles the chart's template subset and refuses what it does not know.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { MANIFEST, renderManifest } from '../../../deploy/render/render-manifest.ts';
import { Renderer } from '../../../deploy/render/template.ts';

describe('static install manifest', () => {
  test('deploy/portico.yaml is current (node deploy/render/render-manifest.ts rewrites it)', () => {
    assert.equal(readFileSync(MANIFEST, 'utf8'), renderManifest());
  });

  test('it holds the objects of a default install, all in the portico namespace', () => {
    const docs = parseAllDocuments(readFileSync(MANIFEST, 'utf8')).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string } });
    assert.deepEqual(docs.map((d) => d.kind), ['Namespace', 'CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'IngressClass', 'Service', 'Deployment', 'PodDisruptionBudget']);
    for (const d of docs) if (!['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'IngressClass'].includes(d.kind)) assert.equal(d.metadata.namespace, 'portico', `${d.kind} ${d.metadata.name}`);
  });
});

describe('chart template renderer', () => {
  const render = (helpers: string, template: string, values: object) => {
    const r = new Renderer();
    r.addHelpers(helpers);
    return r.render(template, { Values: values, Release: { Name: 'rel', Namespace: 'ns' }, Chart: { Name: 'portico', Version: '1.0.0', AppVersion: '1.0.0' } });
  };

  test('trimming, if / else if / else, with, include, variables and pipelines', () => {
    const helpers = '{{- define "n" -}}\n{{- $x := default .Chart.Name .Values.o }}{{ printf "%s-%s" .Release.Name $x | trunc 8 | trimSuffix "-" }}\n{{- end }}';
    const template = 'a: {{ include "n" . }}\n{{- if eq .Values.m "x" }}\nb: x\n{{- else if .Values.m }}\nb: {{ .Values.m | quote }}\n{{- else }}\nb: none\n{{- end }}\n{{- with .Values.list }}\nc:\n  {{- toYaml . | nindent 2 }}\n{{- end }}\nd: {{ add .Values.k 5 }}\n';
    assert.equal(render(helpers, template, { m: 'y', list: ['p', 'q'], k: 1 }), 'a: rel-port\nb: "y"\nc:\n  - p\n  - q\nd: 6\n');
    assert.equal(render(helpers, template, { m: '', list: [], k: 0, o: 'z' }), 'a: rel-z\nb: none\nd: 5\n');
  });

  test('an action outside the subset is an error naming it, never a guess', () => {
    assert.throws(() => render('', '{{ range .Values.x }}{{ end }}', {}), /range.*not supported/);
    assert.throws(() => render('', '{{ upper .Values.x }}', { x: 'a' }), /function "upper" is not supported/);
    assert.throws(() => render('', '{{ include "missing" . }}', {}), /no template named "missing"/);
  });
});
