// Issue 12: an IngressClass change looks again only at the Ingresses naming the classes
// it moved (and at those naming none when portico's default moved), to the same output
// as a fresh translation of the same objects.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSteps, type Step } from './same-output.ts';
import type { KubeObject } from '../../../src/model/k8s.ts';
import { LEGACY_CLASS_ANNOTATION } from '../../../src/model/k8s.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, applyStep, ingress, ingressClass, service, simpleIngress, slice, snapshotOf } from './fixtures.ts';


const GROUPS = { portico: 50, nginx: 20, legacy: 10, none: 10, missing: 5 };

/** Ingresses in groups by the class they name; each nginx Ingress shares its host with a portico one (older), so conflicts move when nginx becomes portico's. */
function world(): Map<string, KubeObject> {
  const objects: KubeObject[] = [ingressClass('portico'), ingressClass('third', { controller: 'example.com/third' }), service('a'), slice('a-1', 'a', [{ ip: '10.0.0.1' }])];
  for (let i = 0; i < GROUPS.portico; i++) objects.push(simpleIngress(`p${i}`, `p${i}.test`, [['/', 'a']], { created: '2024-01-01T00:00:00Z' }));
  for (let i = 0; i < GROUPS.nginx; i++) objects.push(ingress(`n${i}`, { ingressClassName: 'nginx', rules: simpleIngress('x', `p${i}.test`, [['/', 'a'], [`/n${i}`, 'a']]).spec!.rules! }, { created: '2024-02-01T00:00:00Z' }));
  for (let i = 0; i < GROUPS.legacy; i++) objects.push(simpleIngress(`l${i}`, `l${i}.test`, [['/', 'a']], { noClass: true, annotations: { [LEGACY_CLASS_ANNOTATION]: 'other' } }));
  for (let i = 0; i < GROUPS.none; i++) objects.push(simpleIngress(`c${i}`, `c${i}.test`, [['/', 'a']], { noClass: true }));
  for (let i = 0; i < GROUPS.missing; i++) objects.push(ingress(`m${i}`, { ingressClassName: 'missing', rules: simpleIngress('x', `m${i}.test`, [['/', 'a']]).spec!.rules! }));
  return new Map(objects.map((o) => [`${o.kind}/${o.metadata.name}`, o]));
}

describe('IngressClass changes', () => {
  test('re-check only the Ingresses naming the moved classes, to the same output as a fresh translation', () => {
    const memo = createTranslator();
    let objects: ReadonlyMap<string, KubeObject> = world();
    memo(snapshotOf([...objects.values()]), OPTIONS);
    const g = GROUPS;
    // [what, change, Ingresses that must be looked at again (from the groups above)]
    const steps: Step[] = [
      ['another controller\'s class appears: its Ingresses now name a class that exists', (o) => o.set('IngressClass/nginx', ingressClass('nginx', { controller: 'k8s.io/ingress-nginx' })), g.nginx],
      ['that class becomes the default: nothing of portico moves', (o) => o.set('IngressClass/nginx', ingressClass('nginx', { controller: 'k8s.io/ingress-nginx', isDefault: true })), 0],
      ['portico\'s class becomes the default too: the Ingresses without a class are served (and a problem appears)', (o) => o.set('IngressClass/portico', ingressClass('portico', { isDefault: true })), g.none],
      ['the other default moves from nginx to a third controller\'s class: no Ingress moves, the problem\'s text does', (o) => {
        o.set('IngressClass/nginx', ingressClass('nginx', { controller: 'k8s.io/ingress-nginx' }));
        o.set('IngressClass/third', ingressClass('third', { controller: 'example.com/third', isDefault: true }));
      }, 0],
      ['the missing class appears as portico\'s: its Ingresses are served, every ignored reason names the new list', (o) => o.set('IngressClass/missing', ingressClass('missing')), g.missing + g.nginx + g.legacy],
      ['nginx\'s class is taken over by portico: its Ingresses join the hosts they share', (o) => o.set('IngressClass/nginx', ingressClass('nginx', { isDefault: true })), g.nginx + g.legacy],
      ['portico\'s own class goes (nginx stays a default of portico)', (o) => o.delete('IngressClass/portico'), g.portico + g.legacy],
      ['an unrelated annotation on a class: nothing to look at', (o) => o.set('IngressClass/missing', { ...ingressClass('missing'), metadata: { name: 'missing', labels: { team: 'x' } } }), 0],
      ['the default goes while an Ingress moves to another class in the same batch', (o) => {
        o.set('IngressClass/nginx', ingressClass('nginx'));
        o.set('Ingress/p0', ingress('p0', { ingressClassName: 'missing', rules: simpleIngress('x', 'p0.test', [['/', 'a']]).spec!.rules! }, { created: '2024-01-01T00:00:00Z' }));
      }, g.none + 1],
      ['portico\'s class comes back', (o) => o.set('IngressClass/portico', ingressClass('portico')), g.portico - 1 + g.legacy + g.none],
    ];
    objects = checkSteps(memo, objects, steps, () => memo.ingressesChecked(), 'Ingresses looked at');
    // The steps did move things: served and ignored Ingresses, a conflict, a class problem.
    const last = memo(snapshotOf([...objects.values()]), OPTIONS, []);
    assert.ok(last.servedIngresses.includes('default/n0') && last.servedIngresses.includes('default/m0'));
    assert.ok(last.ignoredIngresses.some((i) => i.ingress === 'default/c0'));
  });

  test('the ignored reasons quote the classes portico serves after the change', () => {
    const memo = createTranslator();
    let objects = world();
    memo(snapshotOf([...objects.values()]), OPTIONS);
    const { next, changes, snapshot } = applyStep(objects, (o) => o.set('IngressClass/second', ingressClass('second')));
    objects = next;
    const config = memo(snapshot, OPTIONS, changes);
    const legacy = config.ignoredIngresses.find((i) => i.ingress === 'default/l0');
    assert.match(legacy!.reason, /portico serves: portico, second/);
  });
});
