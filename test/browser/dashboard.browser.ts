// The admin dashboard in a real browser (headless Chromium) against the real CLI in
// standalone mode: it renders without console errors, shows the manifests' hosts and
// their traffic, picks up a new Ingress without a reload, and explains URLs through its
// form (a match and each kind of miss). Writes docs/dashboard.png for the README.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'puppeteer-core';
import { startEchoServer } from '../../examples/echo-server.ts';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get } from '../support/http.ts';
import { launch } from './browser.ts';

const SCREENSHOT = fileURLToPath(new URL('../../docs/dashboard.png', import.meta.url));

describe('dashboard in Chromium', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let shop: Awaited<ReturnType<typeof startEchoServer>>;
  let api: Awaited<ReturnType<typeof startEchoServer>>;
  let browser: Browser;
  let page: Page;
  const consoleErrors: string[] = [];

  before(async () => {
    shop = await startEchoServer({ name: 'shop' });
    api = await startEchoServer({ name: 'api' });
    dir.write('site.yaml', [
      ingressClass('portico'),
      ingress('shop', { rules: [{ host: 'shop.example.com', paths: [{ path: '/', service: 'shop' }, { path: '/api', service: 'api' }, { path: '/health', pathType: 'Exact', service: 'shop' }] }] }, { annotations: { 'portico.dev/rate-limit': '100', 'portico.dev/under-attack': 'false' } }),
      ingress('blog', { rules: [{ host: 'blog.example.com', paths: [{ path: '/', service: 'shop' }] }] }, { annotations: { 'portico.dev/under-attack': 'true', 'portico.dev/response-headers': 'X-Frame-Options: DENY' } }),
      ingress('cold', { rules: [{ host: 'cold.example.com', paths: [{ path: '/', service: 'cold' }] }] }),
      // No IngressClass nginx exists: legacy is marked missingClass. theirs names a class that exists, of another controller.
      ingress('legacy', { className: 'nginx', rules: [{ host: 'legacy.example.com', paths: [{ path: '/', service: 'shop' }] }] }),
      ingressClass('other', { controller: 'example.com/other-controller' }),
      ingress('theirs', { className: 'other', rules: [{ host: 'theirs.example.com', paths: [{ path: '/', service: 'shop' }] }] }),
      ingress('typo', { rules: [{ host: 'typo.example.com', paths: [{ path: '/', service: 'missing' }] }] }, { annotations: { 'portico.dev/rate-limt': '5' } }),
      ...serviceWithEndpoints('shop', [shop.port]),
      ...serviceWithEndpoints('api', [api.port]),
      ...serviceWithEndpoints('cold', [shop.port], { ready: [false] }),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
    browser = await launch([]);
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (err) => consoleErrors.push(String(err)));
    page.on('requestfailed', (r) => consoleErrors.push(`request failed: ${r.url()}`));
  });

  after(async () => {
    await browser?.close();
    await portico?.stop();
    await shop?.close();
    await api?.close();
    dir.cleanup();
  });

  const hostsShown = () => page.$$eval('#hosts [data-host]', (nodes) => nodes.map((n) => n.getAttribute('data-host')));

  test('renders the hosts, backends, policies and problems of the manifests, without console errors', async () => {
    await page.goto(`http://127.0.0.1:${portico.admin}/`);
    await page.waitForSelector('#hosts [data-host="shop.example.com"]');
    assert.deepEqual((await hostsShown()).sort(), ['blog.example.com', 'cold.example.com', 'shop.example.com', 'typo.example.com']);
    const shopText = await page.$eval('#hosts [data-host="shop.example.com"]', (n) => (n as unknown as { innerText: string }).innerText);
    assert.match(shopText, /default\/api:80/);
    assert.match(shopText, /1 ready endpoint/);
    assert.match(shopText, /rate-limit/);
    const blogText = await page.$eval('#hosts [data-host="blog.example.com"]', (n) => (n as unknown as { innerText: string }).innerText);
    assert.match(blogText, /under-attack/);
    const problems = await page.$eval('#problems', (n) => (n as unknown as { innerText: string }).innerText);
    assert.match(problems, /UnknownAnnotation/);
    assert.match(problems, /portico\.dev\/rate-limt/);
    const ignored = await page.$eval('#ignored', (n) => (n as unknown as { innerText: string }).innerText);
    assert.match(ignored, /default\/legacy/);
    // An Ingress whose spec.ingressClassName names no IngressClass (/routes: missingClass) is marked beside it, as a warning.
    assert.match(ignored, /default\/legacy class "nginx" does not exist: spec\.ingressClassName "nginx"/);
    assert.match(ignored, /default\/theirs: spec\.ingressClassName "other" belongs to another controller/);
    const marked = await page.$$eval('#ignored [data-missing-class]', (nodes) => nodes.map((n) => [n.getAttribute('data-missing-class'), n.className]));
    assert.deepEqual(marked, [['nginx', 'warning']]);
    const listeners = await page.$eval('#listeners', (n) => (n as unknown as { innerText: string }).innerText);
    assert.match(listeners, new RegExp(`HTTP :${portico.http}`));
    assert.deepEqual(consoleErrors, []);
  });

  test('live traffic figures per host follow requests without a reload', async () => {
    for (let i = 0; i < 30; i++) await get(portico.http, 'shop.example.com', '/api/x');
    for (let i = 0; i < 5; i++) await get(portico.http, 'cold.example.com', '/');
    // Expressions as strings: they run in the page, and this project has no DOM types.
    await page.waitForFunction(`Number(document.querySelector('#traffic tr[data-host="shop.example.com"] td:nth-child(5)')?.textContent) >= 30`, { timeout: 10_000 });
    await page.waitForFunction(`(document.querySelector('#traffic tr[data-host="cold.example.com"] td:nth-child(3)')?.textContent ?? '').startsWith('100.0')`, { timeout: 10_000 });
    assert.deepEqual(consoleErrors, []);
  });

  test('a new Ingress file appears within seconds, without a reload', async () => {
    const navigations: string[] = [];
    page.on('framenavigated', (f) => navigations.push(f.url()));
    dir.write('new.yaml', [ingress('new', { rules: [{ host: 'new.example.com', paths: [{ path: '/docs', service: 'shop' }] }] })]);
    await page.waitForSelector('#hosts [data-host="new.example.com"]', { timeout: 10_000 });
    assert.deepEqual(navigations, [], 'the page was not reloaded');
    assert.deepEqual(consoleErrors, []);
  });

  async function explainInPage(url: string, headers = ''): Promise<{ reason: string; text: string }> {
    await page.$eval('#explain-result', (n) => n.removeAttribute('data-reason'));
    await page.$eval('#explain-url', (n) => ((n as unknown as { value: string }).value = ''));
    await page.type('#explain-url', url);
    await page.$eval('#explain-headers', (n, h) => ((n as unknown as { value: string }).value = h), headers);
    await page.click('#explain-form button');
    await page.waitForSelector('#explain-result[data-reason]');
    return page.$eval('#explain-result', (n) => ({ reason: n.getAttribute('data-reason')!, text: (n as unknown as { innerText: string }).innerText }));
  }

  test('explain: a match, and each kind of miss', async () => {
    const hit = await explainInPage('http://shop.example.com/api/orders?id=1');
    assert.equal(hit.reason, 'matched');
    assert.match(hit.text, /Ingress default\/shop/);
    assert.match(hit.text, /under the prefix \/api/);
    assert.match(hit.text, /forwarded to the backend/);

    const noHost = await explainInPage('http://unknown.example.com/');
    assert.equal(noHost.reason, 'no-host');
    assert.match(noHost.text, /portico answers 404/);

    const pathMiss = await explainInPage('http://new.example.com/blog');
    assert.equal(pathMiss.reason, 'path-mismatch');
    assert.match(pathMiss.text, /\/docs \(Prefix, default\/new\)/);

    const classMiss = await explainInPage('http://legacy.example.com/');
    assert.equal(classMiss.reason, 'class-not-served');
    assert.match(classMiss.text, /default\/legacy/);
    assert.match(classMiss.text, /nginx/);

    const noEndpoints = await explainInPage('http://cold.example.com/');
    assert.equal(noEndpoints.reason, 'no-endpoints');
    assert.match(noEndpoints.text, /portico answers 503/);
    assert.deepEqual(consoleErrors, []);
  });

  test('screenshot for the README', async () => {
    await explainInPage('http://shop.example.com/api/orders?id=1');
    // Some traffic over two polls, so the picture shows live figures.
    const until = Date.now() + 4500;
    while (Date.now() < until) {
      await Promise.all([get(portico.http, 'shop.example.com', '/api/orders'), get(portico.http, 'shop.example.com', '/'), get(portico.http, 'new.example.com', '/docs/x'), get(portico.http, 'cold.example.com', '/')]);
    }
    await page.waitForFunction(`Number(document.querySelector('#traffic tr[data-host="shop.example.com"] td:nth-child(2)')?.textContent) > 0`, { timeout: 10_000 });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    assert.deepEqual(consoleErrors, []);
  });
});
