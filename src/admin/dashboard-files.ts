// The dashboard's static files (src/admin/dashboard/, copied to dist/admin/dashboard/ by
// `npm run build`), read once when this module loads: a handful of small files, served
// from memory by the admin listener.
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { readdirSync, readFileSync } = process.getBuiltinModule('node:fs');
const { extname } = process.getBuiltinModule('node:path');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Everything from this origin, nothing inline, nothing from elsewhere. */
export const DASHBOARD_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** URL path ("/index.html", "/dashboard/app.js") -> file. Empty when the files were not shipped. */
export const dashboardFiles: ReadonlyMap<string, { readonly type: string; readonly body: Buffer }> = load();

function load(): Map<string, { type: string; body: Buffer }> {
  const dir = new URL('./dashboard/', import.meta.url);
  const files = new Map<string, { type: string; body: Buffer }>();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return files;
  }
  for (const name of names) {
    const type = TYPES[extname(name)];
    if (type === undefined) continue;
    const body = readFileSync(new URL(name, dir));
    files.set(name === 'index.html' ? '/index.html' : `/dashboard/${name}`, { type, body });
  }
  return files;
}
