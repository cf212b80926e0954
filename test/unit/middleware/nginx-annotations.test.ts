// ingress-nginx annotations get a warning naming the portico equivalent, and the
// migration guide's table is the code's table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parsePolicies } from '../../../src/middleware/registry.ts';
import { NGINX_EQUIVALENTS } from '../../../src/middleware/nginx-annotations.ts';
import type { Problem } from '../../../src/model/config.ts';

const ingress = { kind: 'Ingress', namespace: 'default', name: 'shop' };

test('each nginx.ingress.kubernetes.io/* annotation gets one warning naming the portico equivalent, or saying there is none', () => {
  const problems: Problem[] = [];
  parsePolicies(
    {
      'nginx.ingress.kubernetes.io/whitelist-source-range': '10.0.0.0/8',
      'nginx.ingress.kubernetes.io/configuration-snippet': 'more_set_headers "X: y";',
      'nginx.ingress.kubernetes.io/made-up': 'x',
      'other.example/annotation': 'ignored silently',
    },
    ingress,
    problems,
  );
  assert.deepEqual(
    problems.map((p) => [p.severity, p.reason, p.message]),
    [
      ['warning', 'IngressNginxAnnotation', "annotation nginx.ingress.kubernetes.io/configuration-snippet is ingress-nginx's and is ignored: not supported: portico runs no nginx configuration (see docs/migrating-from-ingress-nginx.md)"],
      ['warning', 'IngressNginxAnnotation', "annotation nginx.ingress.kubernetes.io/made-up is ingress-nginx's and is ignored; portico has no equivalent (see docs/migrating-from-ingress-nginx.md)"],
      // An access control is not ignored: the route fails closed (nginx-access.test.ts).
      [
        'error',
        'IngressNginxAnnotation',
        'annotation nginx.ingress.kubernetes.io/whitelist-source-range restricts who may use this Ingress, and portico does not apply it: every client gets 403 until it is translated (the IP lists to portico.dev/ip-allow and ip-deny) or removed (an access control left behind fails closed)',
      ],
    ],
  );
});

test('every equivalent is a real portico annotation, and the migration guide lists exactly this table', () => {
  const annotationsDoc = readFileSync(new URL('../../../docs/annotations.md', import.meta.url), 'utf8');
  const guide = readFileSync(new URL('../../../docs/migrating-from-ingress-nginx.md', import.meta.url), 'utf8');
  const rows = guide.split('\n').filter((l) => /^\| `[a-z-]+` \|/.test(l));
  const expected = Object.entries(NGINX_EQUIVALENTS).map(([name, e]) => `| \`${name}\` | ${e.portico ? '`' + e.portico + '`' : '—'} | ${e.note ?? ''} |`);
  assert.deepEqual(rows, expected);
  for (const e of Object.values(NGINX_EQUIVALENTS)) {
    if (e.portico) assert.ok(annotationsDoc.includes('`' + e.portico + '`'), `${e.portico} is documented`);
  }
});
