// How fast a browser computes the under-attack proof of work, to choose the default
// difficulty (portico.dev/under-attack-difficulty): headless Chromium (Debian's, see
// test/browser/ensure-chromium.sh) runs the page's own worker code, one worker, both
// ways: crypto.subtle (HTTPS and localhost) and the page's JavaScript SHA-256 (plain HTTP).
//   node bench/challenge-hash-rate.ts [seconds per way]
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CHALLENGE_WORKER_SOURCE } from '../src/challenge/page.ts';
import { launch } from '../test/browser/browser.ts';

const seconds = Number(process.argv[2] ?? 3);
// A worker that counts hashes for `ms` with each method instead of stopping at a solution.
const counting = `${CHALLENGE_WORKER_SOURCE}
onmessage = async function (ev) {
  var ms = ev.data.ms, prefix = '16.1800000000.AAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBB:', n = 0, t0 = performance.now(), enc = new TextEncoder();
  while (performance.now() - t0 < ms) { for (var k = 0; k < 1000; k++) sha256(prefix + (n + k)); n += 1000; }
  var js = n / ((performance.now() - t0) / 1000);
  n = 0; t0 = performance.now();
  while (performance.now() - t0 < ms) { var batch = []; for (var j = 0; j < 64; j++) batch.push(crypto.subtle.digest('SHA-256', enc.encode(prefix + (n + j)))); await Promise.all(batch); n += 64; }
  postMessage({ js: js, subtle: n / ((performance.now() - t0) / 1000) });
};`;
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><title>bench</title>');
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const browser = await launch([]);
try {
  const page = await browser.newPage();
  // http://127.0.0.1 is a secure context: crypto.subtle is there.
  await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  const rates = (await page.evaluate(`new Promise(function (resolve) {
    var w = new Worker(URL.createObjectURL(new Blob([${JSON.stringify(counting)}], { type: 'text/javascript' })));
    w.onmessage = function (ev) { resolve(ev.data); };
    w.postMessage({ ms: ${seconds * 1000} });
  })`)) as { js: number; subtle: number };
  const line = (name: string, rate: number) => {
    const at = (bits: number) => ((2 ** bits / rate) * 1000).toFixed(0);
    console.log(`${name}: ${Math.round(rate).toLocaleString('en')} hashes/s per worker; mean time at 14/16/18 bits: ${at(14)} / ${at(16)} / ${at(18)} ms`);
  };
  line('JavaScript SHA-256 (plain HTTP)', rates.js);
  line('crypto.subtle (HTTPS)', rates.subtle);
} finally {
  await browser.close();
  server.close();
}
