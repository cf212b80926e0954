// Black-box: portico.dev/under-attack through the real CLI with --workers 2 and
// --challenge-secret. A clearance earned on one worker is valid on the other, and
// one signed with the Secret's key (as another replica would) is valid too.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get } from '../support/http.ts';
import { pageParams, solve } from '../support/challenge.ts';
import { issueClearance, setChallengeKey } from '../../src/challenge/tokens.ts';

type Echo = Awaited<ReturnType<typeof startEchoServer>>;
const KEY = Buffer.alloc(32, 42);

describe('under-attack through the CLI', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let echo: Echo;

  before(async () => {
    echo = await startEchoServer({ name: 'web' });
    dir.write('site.yaml', [
      ingressClass('portico'),
      ingress('web', { rules: [{ host: 'guarded.local', paths: [{ path: '/', service: 'web' }] }] }, { annotations: { 'portico.dev/under-attack': 'true', 'portico.dev/under-attack-difficulty': '6' } }),
      ...serviceWithEndpoints('web', [echo.port]),
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'challenge', namespace: 'edge' }, type: 'Opaque', data: { key: KEY.toString('base64') } },
    ]);
    portico = await startPortico(['--manifests', dir.path, '--workers', '2', '--challenge-secret', 'edge/challenge']);
  });

  after(async () => {
    assert.equal(await portico?.stop(), 0);
    await echo?.close();
    dir.cleanup();
  });

  test('a clearance earned on one worker lets the browser through on every worker', async () => {
    const page = await get(portico.http, 'guarded.local', '/');
    assert.equal(page.status, 403);
    const { nonce, bits } = pageParams(page.text);
    const answer = await get(portico.http, 'guarded.local', '/', { headers: { cookie: `portico_challenge=${solve(nonce, bits)}` } });
    assert.equal(answer.status, 303);
    const cookie = (answer.headers['set-cookie'] ?? []).find((c) => c.startsWith('portico_clearance='))!.split(';')[0]!;
    // A new connection per request: node:cluster spreads them over both workers.
    for (let i = 0; i < 20; i++) assert.equal((await get(portico.http, 'guarded.local', `/${i}`, { headers: { cookie } })).status, 200);
    const pids = () => new Set(portico.logs.filter((l) => l.kind === 'access' && l.host === 'guarded.local' && l.status === 200).map((l) => l.pid));
    await eventually(async () => pids().size === 2, 5000, 'both workers let the clearance through');
    // The dashboard's figures add up the workers' series.
    await eventually(async () => {
      const state = (await get(portico.admin, 'admin', '/dashboard/state')).json<{ hosts: Record<string, { requests: number }> }>();
      return (state.hosts['guarded.local']?.requests ?? 0) >= 20;
    }, 5000, 'dashboard totals from both workers');
  });

  test("the workers sign with the Secret's key: a clearance another replica made is valid here", async () => {
    setChallengeKey(KEY);
    const cookie = `portico_clearance=${issueClearance('guarded.local', Math.floor(Date.now() / 1000) + 60)}`;
    for (let i = 0; i < 6; i++) assert.equal((await get(portico.http, 'guarded.local', '/', { headers: { cookie } })).status, 200);
    assert.ok(portico.logs.some((l) => String(l.msg).includes('signed with the key of Secret edge/challenge')));
  });
});

describe('--challenge-secret naming a Secret that does not exist', () => {
  test('says so once, and the challenge still works with a generated key', async () => {
    const dir = new ManifestDir();
    const echo = await startEchoServer({ name: 'web' });
    dir.write('site.yaml', [
      ingressClass('portico'),
      ingress('web', { rules: [{ host: 'guarded.local', paths: [{ path: '/', service: 'web' }] }] }, { annotations: { 'portico.dev/under-attack': 'true', 'portico.dev/under-attack-difficulty': '4' } }),
      ...serviceWithEndpoints('web', [echo.port]),
    ]);
    const portico = await startPortico(['--manifests', dir.path, '--challenge-secret', 'edge/missing']);
    try {
      const error = portico.logs.find((l) => String(l.msg).startsWith('--challenge-secret edge/missing: no such Secret'));
      assert.ok(error, 'an error line names the flag and the Secret');
      const page = await get(portico.http, 'guarded.local', '/');
      const { nonce, bits } = pageParams(page.text);
      const answer = await get(portico.http, 'guarded.local', '/', { headers: { cookie: `portico_challenge=${solve(nonce, bits)}` } });
      const cookie = (answer.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
      assert.equal((await get(portico.http, 'guarded.local', '/', { headers: { cookie } })).status, 200);
    } finally {
      await portico.stop();
      await echo.close();
      dir.cleanup();
    }
  });
});
