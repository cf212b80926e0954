import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../../src/model/k8s.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, applyStep, ingress, ingressClass, problemLines, routeLines, run, service, slice, snapshotOf, svcBackend } from './fixtures.ts';

const backendObjects = [service('web'), slice('web-1', 'web', [{ ip: '10.0.0.1' }])];
const rules = [{ host: 'a.example.com', http: { paths: [{ path: '/', pathType: 'Prefix' as const, backend: svcBackend('web') }] } }];

describe('ingress class selection', () => {
  test('spec.ingressClassName naming a portico class is served', () => {
    const config = run([ingressClass('portico'), ingress('a', { ingressClassName: 'portico', rules }), ...backendObjects]);
    assert.deepEqual(config.servedIngresses, ['default/a']);
    assert.equal(config.routes.length, 1);
    assert.deepEqual(config.problems, []);
  });

  test('any class whose controller is portico counts, whatever its name', () => {
    const config = run([ingressClass('internal'), ingress('a', { ingressClassName: 'internal', rules }), ...backendObjects]);
    assert.deepEqual(config.servedIngresses, ['default/a']);
  });

  test("a class of another controller is not served, silently", () => {
    const config = run([
      ingressClass('portico'),
      ingressClass('nginx', { controller: 'k8s.io/ingress-nginx' }),
      ingress('a', { ingressClassName: 'nginx', rules }),
      ...backendObjects,
    ]);
    assert.deepEqual(config.servedIngresses, []);
    assert.deepEqual(config.routes, []);
    assert.deepEqual(config.problems, []);
  });

  test('a class that does not exist is not served, even when named like our class', () => {
    const config = run([ingress('a', { ingressClassName: 'portico', rules }), ...backendObjects]);
    assert.deepEqual(config.servedIngresses, []);
    assert.deepEqual(config.problems, []);
  });

  test('without class: the legacy annotation naming a portico class is served', () => {
    const config = run([
      ingressClass('internal'),
      ingress('a', { rules }, { noClass: true, annotations: { 'kubernetes.io/ingress.class': 'internal' } }),
      ...backendObjects,
    ]);
    assert.deepEqual(config.servedIngresses, ['default/a']);
  });

  test('without class: the legacy annotation equal to --ingress-class is served even without an IngressClass object', () => {
    const config = run([ingress('a', { rules }, { noClass: true, annotations: { 'kubernetes.io/ingress.class': 'portico' } }), ...backendObjects]);
    assert.deepEqual(config.servedIngresses, ['default/a']);
    const other = run([ingress('a', { rules }, { noClass: true, annotations: { 'kubernetes.io/ingress.class': 'edge' } }), ...backendObjects], { ingressClass: 'edge' });
    assert.deepEqual(other.servedIngresses, ['default/a']);
  });

  test('without class: a legacy annotation naming another class is not served, even with a portico default class', () => {
    const config = run([
      ingressClass('portico', { isDefault: true }),
      ingress('a', { rules }, { noClass: true, annotations: { 'kubernetes.io/ingress.class': 'nginx' } }),
      ...backendObjects,
    ]);
    assert.deepEqual(config.servedIngresses, []);
  });

  test('without class or annotation: served when a portico class is the default', () => {
    const config = run([ingressClass('portico', { isDefault: true }), ingress('a', { rules }, { noClass: true }), ...backendObjects]);
    assert.deepEqual(config.servedIngresses, ['default/a']);
    assert.deepEqual(config.problems, []);
  });

  test('without class or annotation: not served when the default class belongs to another controller, or there is none', () => {
    const otherDefault = run([
      ingressClass('portico'),
      ingressClass('nginx', { controller: 'k8s.io/ingress-nginx', isDefault: true }),
      ingress('a', { rules }, { noClass: true }),
      ...backendObjects,
    ]);
    assert.deepEqual(otherDefault.servedIngresses, []);
    const noDefault = run([ingressClass('portico'), ingress('a', { rules }, { noClass: true }), ...backendObjects]);
    assert.deepEqual(noDefault.servedIngresses, []);
  });

  test('several default classes: reported on the portico class, which still serves Ingresses without class', () => {
    const config = run([
      ingressClass('portico', { isDefault: true }),
      ingressClass('nginx', { controller: 'k8s.io/ingress-nginx', isDefault: true }),
      ingress('a', { rules }, { noClass: true }),
      ...backendObjects,
    ]);
    assert.deepEqual(config.servedIngresses, ['default/a']);
    assert.deepEqual(problemLines(config), [
      'IngressClass portico warning MultipleDefaultClasses: metadata.annotations[ingressclass.kubernetes.io/is-default-class]: several IngressClasses are marked default (nginx, portico); portico still serves Ingresses without a class',
    ]);
  });

  test('several default classes of other controllers only: not our business', () => {
    const config = run([
      ingressClass('portico'),
      ingressClass('nginx', { controller: 'k8s.io/ingress-nginx', isDefault: true }),
      ingressClass('traefik', { controller: 'traefik.io/ingress-controller', isDefault: true }),
    ]);
    assert.deepEqual(config.problems, []);
  });

  test('servedIngresses is sorted', () => {
    const config = run([
      ingressClass('portico'),
      ingress('b', { rules }, { namespace: 'z' }),
      ingress('a', { rules: [] }, { namespace: 'z' }),
      ingress('c', { rules: [] }, { namespace: 'a' }),
      ...backendObjects,
    ]);
    assert.deepEqual(config.servedIngresses, ['a/c', 'z/a', 'z/b']);
  });
});

describe('ignored Ingresses are listed with why (no Events: they are not ours)', () => {
  test('another controller\'s class, a class that does not exist, the legacy annotation, no default class', () => {
    const config = run([
      ingressClass('portico'),
      ingressClass('nginx', { controller: 'k8s.io/ingress-nginx' }),
      ingress('theirs', { ingressClassName: 'nginx', rules }),
      ingress('typo', { ingressClassName: 'portcio', rules }),
      ingress('legacy', { rules }, { annotations: { 'kubernetes.io/ingress.class': 'traefik' }, noClass: true }),
      ingress('classless', { rules }, { noClass: true }),
      ingress('ours', { ingressClassName: 'portico', rules }),
      ...backendObjects,
    ]);
    assert.deepEqual(config.servedIngresses, ['default/ours']);
    assert.deepEqual(config.ignoredIngresses, [
      { ingress: 'default/classless', reason: 'no spec.ingressClassName, and no IngressClass of portico is marked ingressclass.kubernetes.io/is-default-class: "true"' },
      { ingress: 'default/legacy', reason: 'annotation kubernetes.io/ingress.class: "traefik" is not portico\'s class (portico serves: portico)' },
      { ingress: 'default/theirs', reason: 'spec.ingressClassName "nginx" belongs to another controller (portico serves: portico)' },
      { ingress: 'default/typo', reason: 'spec.ingressClassName "portcio" names no IngressClass (portico serves: portico)', missingClass: 'portcio' },
    ]);
    assert.deepEqual(config.problems, [], 'no problems, Events or status for them');
  });

  test('only spec.ingressClassName naming no IngressClass at all is marked missingClass (the legacy annotation needs no IngressClass object)', () => {
    const config = run([
      ingressClass('nginx', { controller: 'k8s.io/ingress-nginx' }),
      ingress('theirs', { ingressClassName: 'nginx', rules }),
      ingress('nothing', { ingressClassName: 'nothing', rules }),
      ingress('legacy', { rules }, { annotations: { 'kubernetes.io/ingress.class': 'nothing' }, noClass: true }),
      ...backendObjects,
    ]);
    assert.deepEqual(
      config.ignoredIngresses.map((i) => [i.ingress, i.missingClass]),
      [['default/legacy', undefined], ['default/nothing', 'nothing'], ['default/theirs', undefined]],
    );
    assert.match(config.ignoredIngresses[1]!.reason, /portico serves: none: no IngressClass has spec\.controller portico\.dev\/ingress-controller/);
  });
});

describe('an Ingress naming an IngressClass that does not exist, incrementally', () => {
  const world = () => new Map<string, KubeObject>([
    ['IngressClass/portico', ingressClass('portico')],
    ['IngressClass/nginx', ingressClass('nginx', { controller: 'k8s.io/ingress-nginx' })],
    ['Ingress/typo', ingress('typo', { ingressClassName: 'portcio', rules })],
    ['Ingress/theirs', ingress('theirs', { ingressClassName: 'nginx', rules: [{ host: 'b.example.com', http: rules[0]!.http }] })],
    ...backendObjects.map((o) => [`${o.kind}/${o.metadata.name}`, o] as [string, KubeObject]),
  ]);

  test('the class appears as portico\'s: the mark goes and the Ingress is served; it goes again: marked again', () => {
    const memo = createTranslator();
    let objects: ReadonlyMap<string, KubeObject> = world();
    let config = memo(snapshotOf([...objects.values()]), OPTIONS);
    assert.deepEqual(config.ignoredIngresses.find((i) => i.ingress === 'default/typo')?.missingClass, 'portcio');
    assert.deepEqual(config.servedIngresses, []);

    const checkedBefore = memo.ingressesChecked();
    let step = applyStep(objects, (o) => o.set('IngressClass/portcio', ingressClass('portcio')));
    objects = step.next;
    config = memo(step.snapshot, OPTIONS, step.changes);
    // The Ingress naming the new class, and every ignored one (their reasons quote portico's classes, which changed).
    assert.equal(memo.ingressesChecked() - checkedBefore, 2);
    assert.deepEqual(config.servedIngresses, ['default/typo']);
    assert.deepEqual(routeLines(config), ['a.example.com|Prefix|/ -> default/web:80']);
    assert.deepEqual(config.ignoredIngresses.map((i) => [i.ingress, i.missingClass]), [['default/theirs', undefined]]);
    assert.deepEqual(config.ignoredIngresses, run([...objects.values()]).ignoredIngresses, 'as a fresh translation says');

    step = applyStep(objects, (o) => o.delete('IngressClass/portcio'));
    objects = step.next;
    config = memo(step.snapshot, OPTIONS, step.changes);
    assert.deepEqual(config.servedIngresses, []);
    assert.deepEqual(config.routes, []);
    assert.equal(config.ignoredIngresses.find((i) => i.ingress === 'default/typo')?.missingClass, 'portcio');
  });

  test('the class appears as another controller\'s: the mark goes, the Ingress stays ignored', () => {
    const memo = createTranslator();
    const objects = world();
    memo(snapshotOf([...objects.values()]), OPTIONS);
    const checkedBefore = memo.ingressesChecked();
    const step = applyStep(objects, (o) => o.set('IngressClass/portcio', ingressClass('portcio', { controller: 'example.com/other' })));
    const config = memo(step.snapshot, OPTIONS, step.changes);
    assert.equal(memo.ingressesChecked() - checkedBefore, 1, 'only the Ingress naming the new class is looked at again');
    assert.deepEqual(config.servedIngresses, []);
    assert.deepEqual(config.ignoredIngresses.find((i) => i.ingress === 'default/typo'), {
      ingress: 'default/typo',
      reason: 'spec.ingressClassName "portcio" belongs to another controller (portico serves: portico)',
    });
    assert.deepEqual(config.problems, []);
  });
});
