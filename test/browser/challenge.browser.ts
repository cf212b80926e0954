// The under-attack challenge in a real browser (headless Chromium): the page solves the
// proof of work and lands on the backend's content, over HTTP and HTTPS; forged and expired clearances are challenged again; without
// JavaScript the page says what to do.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { startEchoServer } from '../../examples/echo-server.ts';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { issueClearance, setChallengeKey } from '../../src/challenge/tokens.ts';
import { launch } from './browser.ts';

const HOST = 'guarded.test';
const KEY = Buffer.alloc(32, 9);

/** The status of every main-document response while `action` runs. */
async function documentStatuses(page: Page, action: () => Promise<unknown>): Promise<number[]> {
  const statuses: number[] = [];
  const onResponse = (r: import('puppeteer-core').HTTPResponse) => {
    if (r.request().isNavigationRequest() && r.request().frame() === page.mainFrame()) statuses.push(r.status());
  };
  page.on('response', onResponse);
  try {
    await action();
  } finally {
    page.off('response', onResponse);
  }
  return statuses;
}

/** Waits until the page shows the echo backend's JSON (the challenge reloads the page by itself). */
async function backendContent(page: Page): Promise<{ service: string; path: string; query: string; method: string }> {
  // Expressions as strings: they run in the page, and this project has no DOM types.
  await page.waitForFunction(`document.body !== null && document.body.innerText.includes('"service"')`, { timeout: 30_000 });
  return JSON.parse((await page.evaluate('document.body.innerText')) as string) as { service: string; path: string; query: string; method: string };
}

describe('under-attack challenge in Chromium', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let echo: Awaited<ReturnType<typeof startEchoServer>>;
  let browser: Browser;

  before(async () => {
    echo = await startEchoServer({ name: 'shop' });
    dir.write('site.yaml', [
      ingressClass('portico'),
      // The default difficulty: what a real visitor's browser solves.
      ingress('shop', { rules: [{ host: HOST, paths: [{ path: '/', service: 'shop' }] }] }, { annotations: { 'portico.dev/under-attack': 'true' } }),
      ...serviceWithEndpoints('shop', [echo.port]),
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'challenge', namespace: 'default' }, type: 'Opaque', data: { key: KEY.toString('base64') } },
    ]);
    portico = await startPortico(['--manifests', dir.path, '--challenge-secret', 'default/challenge']);
    setChallengeKey(KEY);
    browser = await launch([HOST]);
  });

  after(async () => {
    await browser?.close();
    await portico?.stop();
    await echo?.close();
    dir.cleanup();
  });

  test('over HTTP: the page solves the challenge and lands on the backend, path and query kept', async (t) => {
    const page = await browser.newPage();
    const started = Date.now();
    const statuses = await documentStatuses(page, async () => {
      await page.goto(`http://${HOST}:${portico.http}/cart?item=3`);
      const content = await backendContent(page);
      assert.equal(content.service, 'shop');
      assert.equal(content.path, '/cart');
      assert.equal(content.query, 'item=3');
      assert.equal(content.method, 'GET');
    });
    t.diagnostic(`challenge to content over HTTP: ${Date.now() - started} ms`);
    assert.deepEqual(statuses, [403, 303, 200], 'the challenge page, the solution (303 with the clearance), the content');
    const cookies = await browser.cookies();
    const clearance = cookies.find((c) => c.name === 'portico_clearance');
    assert.ok(clearance, 'the clearance cookie is set');
    assert.equal(clearance.httpOnly, true);
    assert.equal(clearance.sameSite, 'Lax');
    assert.equal(clearance.secure, false);
    assert.equal(cookies.some((c) => c.name === 'portico_challenge'), false, 'the solution cookie is deleted');
    // With the clearance, the next page goes straight to the backend.
    assert.deepEqual(await documentStatuses(page, () => page.goto(`http://${HOST}:${portico.http}/other`)), [200]);
    await page.close();
  });

  test('forged and expired clearances are challenged again, then solved again', async () => {
    const page = await browser.newPage();
    const url = `http://${HOST}:${portico.http}/again`;
    const past = issueClearance(HOST, Math.floor(Date.now() / 1000) - 10);
    const [expiry, mac] = issueClearance(HOST, Math.floor(Date.now() / 1000) + 60).split('.');
    const forged = `${Number(expiry) + 86400}.${mac}`;
    for (const value of [forged, past]) {
      await browser.deleteCookie(...(await browser.cookies()));
      await browser.setCookie({ name: 'portico_clearance', value, domain: HOST, path: '/', httpOnly: true });
      const statuses = await documentStatuses(page, async () => {
        await page.goto(url);
        assert.equal((await backendContent(page)).path, '/again');
      });
      assert.deepEqual(statuses, [403, 303, 200], `with the clearance ${value === forged ? 'forged' : 'expired'} (${value}): document statuses ${statuses.join(',')}`);
    }
    await page.close();
  });

  test('over HTTPS: solved the same way, and the clearance is Secure', async (t) => {
    await browser.deleteCookie(...(await browser.cookies()));
    const page = await browser.newPage();
    const started = Date.now();
    await page.goto(`https://${HOST}:${portico.https}/secure?x=1`);
    const content = await backendContent(page);
    t.diagnostic(`challenge to content over HTTPS: ${Date.now() - started} ms`);
    assert.equal(content.path, '/secure');
    assert.equal(content.query, 'x=1');
    const clearance = (await browser.cookies()).find((c) => c.name === 'portico_clearance');
    assert.equal(clearance?.secure, true);
    await page.close();
  });

  test('without JavaScript the page says what to do', async () => {
    await browser.deleteCookie(...(await browser.cookies()));
    const page = await browser.newPage();
    await page.setJavaScriptEnabled(false);
    const response = await page.goto(`http://${HOST}:${portico.http}/`);
    assert.equal(response?.status(), 403);
    const text = (await page.evaluate('document.body.innerText')) as string;
    assert.match(text, /This check needs JavaScript/);
    assert.match(text, /Turn JavaScript on for guarded\.test/);
    await page.close();
  });

  test('a browser that never sends the cookie back is told so, instead of reloading for ever', async () => {
    await browser.deleteCookie(...(await browser.cookies()));
    const page = await browser.newPage();
    // The cookie jar is emptied before every request leaves, as in a browser that keeps no
    // cookies (Chromium adds the Cookie header after interception, so it is the jar that goes).
    await page.setRequestInterception(true);
    const sentCookies: string[] = [];
    page.on('request', (request) => {
      void (async () => {
        const jar = await browser.cookies();
        sentCookies.push(...jar.map((c) => c.name));
        if (jar.length > 0) await browser.deleteCookie(...jar);
        await request.continue();
      })();
    });
    const statuses = await documentStatuses(page, async () => {
      await page.goto(`http://${HOST}:${portico.http}/loop`);
      await page
        .waitForFunction(`document.body !== null && document.body.innerText.includes('did not send its cookie back')`, { timeout: 30_000 })
        .catch((err: unknown) => {
          throw new Error(`${(err as Error).message}; cookies sent: ${sentCookies.join(' | ')}`);
        });
    }).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}; page: ${String(await page.evaluate('document.body && document.body.innerText'))}`);
    });
    assert.ok(sentCookies.length > 0, 'the page did solve and set its cookie (which was then dropped)');
    assert.ok(statuses.length >= 3 && statuses.length <= 5, `a few challenges, then it stops: ${statuses.join(',')}`);
    assert.ok(statuses.every((s) => s === 403), `never past the challenge: ${statuses.join(',')}`);
    const text = (await page.evaluate('document.body.innerText')) as string;
    assert.match(text, /Allow cookies for this site/);
    await page.close();
  });
});
