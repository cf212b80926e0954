// Headless Chromium for the browser tests: the system's (Debian's `chromium`; run
// test/browser/ensure-chromium.sh, or set CHROMIUM_PATH), driven by puppeteer-core over
// the DevTools protocol. Host names are mapped to 127.0.0.1 inside the browser, so pages
// are opened by the names the Ingresses serve.
import { existsSync } from 'node:fs';
import puppeteer, { type Browser } from 'puppeteer-core';

export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].filter((p): p is string => p !== undefined && p !== '');
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) throw new Error('no Chromium found: run test/browser/ensure-chromium.sh (apt-get install chromium) or set CHROMIUM_PATH');
  return found;
}

/** A headless browser that resolves `hosts` to 127.0.0.1 and accepts portico's self-signed certificate. */
export function launch(hosts: readonly string[]): Promise<Browser> {
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      // CI runs as root, where Chromium's sandbox cannot start.
      '--no-sandbox',
      '--disable-dev-shm-usage',
      '--ignore-certificate-errors',
      `--host-resolver-rules=${hosts.map((h) => `MAP ${h} 127.0.0.1`).join(', ')}`,
    ],
  });
}
