// ManifestDirectorySource against real temp directories: initial load, live changes
// through fs.watch and rescans, broken files, deletions, duplicates.
import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { mkdtemp, mkdir, rm, symlink, writeFile, rename, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { stringify } from 'yaml';
import { ManifestDirectorySource } from '../../src/sources/standalone.ts';
import { ObjectStore } from '../../src/sources/store.ts';
import type { Problem } from '../../src/model/config.ts';
import type { Ingress, Service } from '../../src/model/k8s.ts';

const dirs: string[] = [];
const sources: ManifestDirectorySource[] = [];

after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
afterEach(() => {
  for (const s of sources.splice(0)) s.stop();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portico-standalone-'));
  dirs.push(dir);
  return dir;
}

async function put(dir: string, rel: string, content: string | object[]): Promise<void> {
  const path = join(dir, rel);
  await mkdir(dirname(path), { recursive: true });
  const text = typeof content === 'string' ? content : content.map((o) => stringify(o)).join('---\n');
  await writeFile(path, text);
}

function service(name: string, port = 80, namespace?: string): object {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, ...(namespace ? { namespace } : {}) }, spec: { ports: [{ name: 'http', port }] } };
}

function ingress(name: string, host: string): object {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name },
    spec: { rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] },
  };
}

interface Harness {
  dir: string;
  store: ObjectStore;
  source: ManifestDirectorySource;
  problems: () => readonly Problem[];
}

interface LogLine {
  level: 'warn' | 'info';
  msg: string;
  obj: object;
}

async function start(dir: string, options: { rescanMs?: number; pollMs?: number; watch?: boolean; logs?: LogLine[]; debugLogs?: { msg: string; obj: object }[] } = {}): Promise<Harness> {
  const store = new ObjectStore();
  let problems: readonly Problem[] = [];
  const { logs, debugLogs, ...rest } = options;
  const log = {
    warn: (obj: object, msg: string) => logs?.push({ level: 'warn', msg, obj }),
    info: (obj: object, msg: string) => logs?.push({ level: 'info', msg, obj }),
    debug: (obj: object, msg: string) => debugLogs?.push({ msg, obj }),
  };
  const source = new ManifestDirectorySource({ dir, store, onProblems: (p) => (problems = p), rescanMs: 500, log, ...rest });
  sources.push(source);
  await source.start();
  return { dir, store, source, problems: () => problems };
}

/** Waits until `check` holds; the long deadline only turns a hang into a failure, it is not the expectation. */
async function eventually(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 8000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Waits for a change to be applied. Most callers set rescanMs to 10 minutes, so only the
 * watcher (or, where watching fails, the fast poll) can apply it. How fast it is applied
 * is measured in bench/standalone-latency.ts; the deadline only turns a hang into a failure.
 */
async function applied(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 8000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`never applied: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Runs `body` with fs.watch replaced (the source calls it on the module object). */
async function withFsWatch(fake: typeof fs.watch, body: () => Promise<void>): Promise<void> {
  const real = fs.watch;
  fs.watch = fake;
  try {
    await body();
  } finally {
    fs.watch = real;
  }
}

const servicePort = (store: ObjectStore, key: string) => (store.get('Service', key) as Service | undefined)?.spec?.ports?.[0]?.port;

describe('ManifestDirectorySource: initial load', () => {
  test('reads YAML and JSON recursively, skipping dotfiles, dot-directories and other extensions', async () => {
    const dir = await tempDir();
    await put(dir, 'a.yaml', [service('a'), { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'ignored' } }, ingress('a', 'a.local')]);
    await put(dir, 'nested/deeper/b.yml', [service('b', 80, 'shop')]);
    await put(dir, 'c.json', JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [service('c'), service('d')] }));
    await put(dir, '.hidden.yaml', [service('hidden-file')]);
    await put(dir, '.git/x.yaml', [service('hidden-dir')]);
    await put(dir, 'notes.txt', 'apiVersion: v1\nkind: Service\nmetadata: {name: txt}\n');
    const h = await start(dir);
    await h.source.ready;
    assert.deepEqual([...h.store.services.keys()].sort(), ['default/a', 'default/c', 'default/d', 'shop/b']);
    assert.deepEqual([...h.store.ingresses.keys()], ['default/a']);
    assert.deepEqual(h.problems(), []);
  });

  test('each walk of the tree is logged at debug with how long it took and how many files it found new or changed', async () => {
    const dir = await tempDir();
    await put(dir, 'a.yaml', [service('a')]);
    await put(dir, 'nested/b.yaml', [service('b')]);
    const debugLogs: { msg: string; obj: object }[] = [];
    const h = await start(dir, { rescanMs: 100, debugLogs });
    await h.source.ready;
    const walks = () => debugLogs.filter((l) => l.msg === 'manifest directory walked').map((l) => l.obj as { walkMs: number; changed: number });
    assert.equal(walks()[0]?.changed, 2, 'the first walk read both files');
    assert.equal(typeof walks()[0]?.walkMs, 'number');
    // The periodic rescan walks again and finds nothing new.
    await eventually('a second walk', () => walks().length >= 2);
    assert.equal(walks()[1]!.changed, 0);
  });

  test('a missing directory is a clear error', async () => {
    const dir = join(await tempDir(), 'nope');
    const source = new ManifestDirectorySource({ dir, store: new ObjectStore() });
    sources.push(source);
    await assert.rejects(source.start(), { message: `--manifests ${dir}: no such directory` });
    await assert.rejects(source.ready);
  });

  test('a file in place of the directory is a clear error', async () => {
    const file = join(await tempDir(), 'file.yaml');
    await writeFile(file, '');
    const source = new ManifestDirectorySource({ dir: file, store: new ObjectStore() });
    sources.push(source);
    await assert.rejects(source.start(), /not a directory/);
  });

  test('a symlink loop does not hang the scan', async () => {
    const dir = await tempDir();
    await put(dir, 'sub/a.yaml', [service('a')]);
    await symlink(dir, join(dir, 'sub', 'loop'));
    const h = await start(dir);
    assert.deepEqual([...h.store.services.keys()], ['default/a']);
  });

  test('invalid objects are reported as file problems with file:line, and the rest of the file is served', async () => {
    const dir = await tempDir();
    await put(dir, 'apps/mixed.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: ok}\n---\napiVersion: v1\nkind: Service\nmetadata: {namespace: x}\n');
    const h = await start(dir);
    assert.ok(h.store.services.has('default/ok'));
    assert.deepEqual(h.problems(), [
      { object: { kind: 'File', name: 'apps/mixed.yaml' }, severity: 'error', reason: 'InvalidManifest', message: 'apps/mixed.yaml:5: metadata.name: is required' },
    ]);
  });
  test('a directory given as a relative path with a trailing slash: its files and nested ones read, and the walk sees edits', async () => {
    const dir = await tempDir();
    await put(dir, 'a.yaml', [service('a')]);
    await put(dir, 'nested/b.yaml', [service('b', 80)]);
    // The walk builds each path from its directory's; no watcher here, so only the walk sees the edit.
    const h = await start(`./${relative(process.cwd(), dir)}/`, { watch: false, pollMs: 100 });
    assert.deepEqual([...h.store.services.keys()].sort(), ['default/a', 'default/b']);
    await put(dir, 'nested/b.yaml', [service('b', 8080)]);
    await eventually('the walk sees the edit', () => servicePort(h.store, 'default/b') === 8080);
    assert.deepEqual(h.problems(), []);
  });
});

describe('ManifestDirectorySource: changes', () => {
  test('an edited file is applied: changed objects updated, removed ones deleted, new ones added', async () => {
    const dir = await tempDir();
    await put(dir, 'apps.yaml', [service('web', 80), service('old')]);
    const h = await start(dir);
    await put(dir, 'apps.yaml', [service('web', 8080), service('new')]);
    await eventually('the edit is applied', () => servicePort(h.store, 'default/web') === 8080 && h.store.services.has('default/new'));
    assert.equal(h.store.services.has('default/old'), false);
  });

  test('a file written in two steps (truncated, then written in parts) is served without a gap or a problem', async () => {
    const dir = await tempDir();
    await put(dir, 'apps.yaml', [service('web', 80), service('api', 80)]);
    const h = await start(dir);
    const seen: string[] = [];
    h.store.onChange((event) => {
      for (const c of event.changes) seen.push(`${c.type} ${c.key}`);
    });
    const reported: string[] = [];
    const watchProblems = setInterval(() => {
      for (const p of h.problems()) reported.push(p.message);
    }, 1);
    try {
      const text = [service('web', 8080), service('api', 8080)].map((o) => stringify(o)).join('---\n');
      // Cut inside the second document: its port is missing (an invalid object) until the rest is written.
      const cut = text.indexOf('port: 8080', text.indexOf('name: api')) + 'port:'.length;
      const fd = fs.openSync(join(dir, 'apps.yaml'), 'r+');
      fs.ftruncateSync(fd, 0);
      fs.writeSync(fd, text.slice(0, cut), 0);
      await new Promise((r) => setTimeout(r, 5));
      fs.writeSync(fd, text.slice(cut), cut);
      fs.closeSync(fd);
      await eventually('both edits are applied', () => servicePort(h.store, 'default/web') === 8080 && servicePort(h.store, 'default/api') === 8080);
      await new Promise((r) => setTimeout(r, 150));
    } finally {
      clearInterval(watchProblems);
    }
    assert.deepEqual(seen.filter((c) => c.startsWith('deleted')), [], 'no object went away in between');
    assert.deepEqual(reported, [], 'the half-written file was never reported broken');
    assert.deepEqual(h.problems(), []);
  });

  test('an unchanged object keeps its identity when its file is rewritten', async () => {
    const dir = await tempDir();
    await put(dir, 'apps.yaml', [service('stable'), service('moving', 80)]);
    const h = await start(dir);
    const stable = h.store.get('Service', 'default/stable');
    await put(dir, 'apps.yaml', [service('stable'), service('moving', 81)]);
    await eventually('the edit is applied', () => servicePort(h.store, 'default/moving') === 81);
    assert.equal(h.store.get('Service', 'default/stable'), stable);
  });

  test('fs.watch alone notices a change (the rescan is far off)', async () => {
    const dir = await tempDir();
    await put(dir, 'app.yaml', [service('web', 80)]);
    const h = await start(dir, { rescanMs: 600_000 });
    await put(dir, 'app.yaml', [service('web', 81)]);
    await eventually('the change is applied', () => servicePort(h.store, 'default/web') === 81);
    await put(dir, 'brand/new/dir/app.yaml', [service('deep')]);
    await eventually('a file in a new directory is applied', () => h.store.services.has('default/deep'));
  });

  test('the periodic rescan alone notices changes (no watcher)', async () => {
    const dir = await tempDir();
    await put(dir, 'app.yaml', [service('web', 80)]);
    const h = await start(dir, { watch: false, pollMs: 100 });
    await put(dir, 'app.yaml', [service('web', 81)]);
    await put(dir, 'more/b.yaml', [service('b')]);
    await eventually('the changes are applied', () => servicePort(h.store, 'default/web') === 81 && h.store.services.has('default/b'));
  });

  test('a new file in a new subdirectory is picked up', async () => {
    const dir = await tempDir();
    const h = await start(dir);
    await put(dir, 'team/new/app.yaml', [ingress('late', 'late.local')]);
    await eventually('the new Ingress is loaded', () => h.store.ingresses.has('default/late'));
  });

  test('a deleted file removes its objects, and only its objects', async () => {
    const dir = await tempDir();
    await put(dir, 'a.yaml', [service('a')]);
    await put(dir, 'b.yaml', [service('b')]);
    const h = await start(dir);
    await unlink(join(dir, 'a.yaml'));
    await eventually('the objects of a.yaml are gone', () => !h.store.services.has('default/a'));
    assert.ok(h.store.services.has('default/b'));
  });

  test('a file truncated and then written in place never loses its objects in between', async () => {
    const dir = await tempDir();
    await put(dir, 'app.yaml', [service('web', 80)]);
    const h = await start(dir);
    const deleted: string[] = [];
    h.store.onChange((e) => {
      for (const c of e.changes) if (c.type === 'deleted') deleted.push(`${c.kind} ${c.key}`);
    });
    // What writeFile does in two steps, with a slow writer between them.
    await writeFile(join(dir, 'app.yaml'), '');
    await new Promise((r) => setTimeout(r, 40));
    await put(dir, 'app.yaml', [service('web', 81)]);
    await applied('the new content is applied', () => servicePort(h.store, 'default/web') === 81);
    assert.deepEqual(deleted, []);
  });

  test('a file left empty drops its objects', async () => {
    const dir = await tempDir();
    await put(dir, 'app.yaml', [service('web', 80)]);
    const h = await start(dir);
    await writeFile(join(dir, 'app.yaml'), '');
    await applied('the emptied file is applied', () => !h.store.services.has('default/web'));
  });

  test('a file replaced by rename (as editors save) is applied', async () => {
    const dir = await tempDir();
    await put(dir, 'app.yaml', [service('web', 80)]);
    const h = await start(dir);
    await put(dir, '.app.yaml.tmp', [service('web', 9090)]);
    await rename(join(dir, '.app.yaml.tmp'), join(dir, 'app.yaml'));
    await eventually('the replaced file is applied', () => servicePort(h.store, 'default/web') === 9090);
  });

  test('a broken file keeps its last good objects and reports file:line; other files are unaffected; fixing it applies the new content', async () => {
    const dir = await tempDir();
    await put(dir, 'fragile.yaml', [service('fragile', 80), service('sibling', 80)]);
    await put(dir, 'other.yaml', [service('other', 80)]);
    const h = await start(dir);
    const fragile = h.store.get('Service', 'default/fragile');

    await put(dir, 'fragile.yaml', 'apiVersion: v1\nkind: Service\nmetadata:\n  name: fragile\n  labels: [unclosed\n');
    await eventually('the broken file is reported', () => h.problems().some((p) => p.object.name === 'fragile.yaml'));
    const problem = h.problems().find((p) => p.object.name === 'fragile.yaml')!;
    assert.equal(problem.severity, 'error');
    assert.match(problem.message, /^fragile\.yaml:5: Flow sequence/);
    assert.equal(h.store.get('Service', 'default/fragile'), fragile, 'last good version still served');
    assert.ok(h.store.services.has('default/sibling'), 'the rest of the broken file too');

    await put(dir, 'other.yaml', [service('other', 81)]);
    await eventually('other files still apply', () => servicePort(h.store, 'default/other') === 81);
    assert.equal(h.store.get('Service', 'default/fragile'), fragile);

    await put(dir, 'fragile.yaml', [service('fragile', 8443)]);
    await eventually('the fixed file is applied', () => servicePort(h.store, 'default/fragile') === 8443);
    assert.equal(h.store.services.has('default/sibling'), false, 'the fixed content is the new truth');
    assert.deepEqual(h.problems(), []);
  });

  test('an object that becomes invalid keeps its last good version while the rest of its file is updated', async () => {
    const dir = await tempDir();
    await put(dir, 'apps.yaml', [service('web', 80), ingress('web', 'web.local')]);
    const h = await start(dir);
    const good = h.store.get('Ingress', 'default/web');
    const broken = { ...ingress('web', 'web.local'), spec: { rules: 'oops' } };
    await put(dir, 'apps.yaml', [service('web', 81), broken]);
    await eventually('the valid part is applied', () => servicePort(h.store, 'default/web') === 81);
    assert.equal(h.store.get('Ingress', 'default/web'), good);
    // The Service takes lines 1-8, then "---": the Ingress starts on line 10.
    assert.deepEqual(h.problems().map((p) => p.message), ['apps.yaml:10: spec.rules: must be a list']);
  });

  test('a file that breaks while new is not served until it parses', async () => {
    const dir = await tempDir();
    const h = await start(dir);
    await put(dir, 'new.json', '{"apiVersion": "v1", "kind": "Service",\n "metadata": {"name": "x"}');
    await eventually('the broken file is reported', () => h.problems().length === 1);
    assert.match(h.problems()[0]!.message, /^new\.json:2: /);
    assert.equal(h.store.services.size, 0);
  });

  test('the same object in two files: the first in path order wins and the other is reported; removing the winner hands over', async () => {
    const dir = await tempDir();
    await put(dir, 'a/first.yaml', [ingress('dup', 'first.local')]);
    await put(dir, 'b/second.yaml', [service('unrelated'), ingress('dup', 'second.local')]);
    const h = await start(dir);
    const host = () => (h.store.get('Ingress', 'default/dup') as Ingress | undefined)?.spec?.rules?.[0]?.host;
    assert.equal(host(), 'first.local');
    assert.deepEqual(h.problems(), [
      {
        object: { kind: 'File', name: 'b/second.yaml' },
        severity: 'warning',
        reason: 'DuplicateObject',
        message: 'b/second.yaml:10: Ingress default/dup is already defined in a/first.yaml:1; this definition is ignored',
      },
    ]);
    await unlink(join(dir, 'a/first.yaml'));
    await eventually('the second definition takes over', () => host() === 'second.local');
    assert.deepEqual(h.problems(), []);
  });

  test('store change events follow the files, and stop() stops them', async () => {
    const dir = await tempDir();
    await put(dir, 'a.yaml', [service('a')]);
    const h = await start(dir);
    const seen: string[] = [];
    h.store.onChange((e) => seen.push(...e.changes.map((c) => `${c.type} ${c.key}`)));
    await put(dir, 'a.yaml', [service('a'), service('b')]);
    await eventually('the change is announced', () => seen.length > 0);
    assert.deepEqual(seen, ['added default/b']);
    h.source.stop();
    await put(dir, 'a.yaml', [service('c')]);
    await new Promise((r) => setTimeout(r, 700)); // longer than the debounce and the rescan interval
    assert.deepEqual(seen, ['added default/b'], 'nothing applied after stop()');
  });
});

describe('ManifestDirectorySource: work in proportion to the change', () => {
  test('an edit re-reads only the edited file and walks no tree; a new directory is walked', async () => {
    const dir = await tempDir();
    for (let i = 0; i < 50; i++) await put(dir, `svc-${i}.yaml`, [service(`web-${i}`, 80)]);
    const h = await start(dir, { rescanMs: 600_000 });
    const before = h.source.work;
    assert.equal(before.reads, 50);

    await put(dir, 'svc-7.yaml', [service('web-7', 81)]);
    await applied('the edit', () => servicePort(h.store, 'default/web-7') === 81);
    await put(dir, 'new.yaml', [service('new', 82)]);
    await applied('the new file', () => servicePort(h.store, 'default/new') === 82);
    await unlink(join(dir, 'svc-3.yaml'));
    await applied('the removal', () => h.store.get('Service', 'default/web-3') === undefined);
    const after = h.source.work;
    assert.equal(after.walks, before.walks, 'no walk of the tree');
    assert.ok(after.reads - before.reads <= 4, `files read: ${after.reads - before.reads}`);
    assert.equal(servicePort(h.store, 'default/web-8'), 80, 'the other files keep serving');

    await put(dir, 'sub/deeper.yaml', [service('deep', 83)]);
    await applied('a file in a new directory', () => servicePort(h.store, 'default/deep') === 83);
    assert.ok(h.source.work.walks > after.walks, 'a new directory is walked (and watched)');
    await put(dir, 'sub/deeper.yaml', [service('deep', 84)]);
    await applied('an edit in the new directory', () => servicePort(h.store, 'default/deep') === 84);
  });

  test('a walk of the tree in progress does not hold an edit back, and does not undo it when it ends', async () => {
    const dir = await tempDir();
    await put(dir, 'web.yaml', [service('web', 80)]);
    await put(dir, 'gone.yaml', [service('gone', 80)]);
    await put(dir, 'slow/held.yaml', [service('held', 80)]);
    const h = await start(dir, { rescanMs: 600_000 });
    // The walk's stat of slow/held.yaml waits until the test lets it go, as a walk of
    // 10,000 files keeps going for a while.
    const realStat = fs.stat;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let walkHeld = false;
    fs.stat = ((path: fs.PathLike, ...rest: unknown[]) => {
      if (String(path).endsWith(join('slow', 'held.yaml'))) {
        walkHeld = true;
        void gate.then(() => (realStat as (...a: unknown[]) => void)(path, ...rest));
        return;
      }
      (realStat as (...a: unknown[]) => void)(path, ...rest);
    }) as typeof fs.stat;
    try {
      const walks = h.source.work.walks;
      await mkdir(join(dir, 'newdir')); // a new directory: the tree is walked
      await applied('the walk reaching the held file', () => walkHeld);
      await put(dir, 'web.yaml', [service('web', 81)]);
      await put(dir, 'added.yaml', [service('added', 82)]);
      await unlink(join(dir, 'gone.yaml'));
      await applied('the edit, while the walk waits', () => servicePort(h.store, 'default/web') === 81);
      await applied('the new file, while the walk waits', () => servicePort(h.store, 'default/added') === 82);
      await applied('the removal, while the walk waits', () => h.store.get('Service', 'default/gone') === undefined);
      assert.ok(h.source.work.walking, 'the walk is still in progress');
      assert.equal(h.source.work.walks, walks + 1);
      release();
      await applied('the walk ends', () => !h.source.work.walking);
      // It applied what it found, and left the newer reads alone.
      assert.equal(servicePort(h.store, 'default/web'), 81);
      assert.equal(servicePort(h.store, 'default/added'), 82);
      assert.equal(h.store.get('Service', 'default/gone'), undefined);
      assert.equal(servicePort(h.store, 'default/held'), 80);
    } finally {
      release();
      fs.stat = realStat;
    }
  });

  test('duplicates across files follow edits of either file', async () => {
    const dir = await tempDir();
    await put(dir, 'a.yaml', [service('web', 80)]);
    await put(dir, 'b.yaml', [service('web', 90)]);
    const h = await start(dir, { rescanMs: 600_000 });
    assert.equal(servicePort(h.store, 'default/web'), 80, 'the first file in path order wins');
    assert.deepEqual(h.problems().map((p) => [p.object.name, p.reason]), [['b.yaml', 'DuplicateObject']]);
    await unlink(join(dir, 'a.yaml'));
    await applied('the other definition takes over', () => servicePort(h.store, 'default/web') === 90);
    await eventually('no duplicate any more', () => h.problems().length === 0);
    await put(dir, 'a.yaml', [service('web', 70)]);
    await applied('the first file wins again', () => servicePort(h.store, 'default/web') === 70);
    await eventually('the duplicate is reported again', () => h.problems().some((p) => p.object.name === 'b.yaml'));
  });
});

describe('ManifestDirectorySource: every edit applied by the watcher, whatever the editing style', () => {
  // The safety-net rescan is set far off: only the watches can meet the deadline.
  test('a file replaced by rename (sed -i, mv, safe-write), then written in place, is applied each time', async () => {
    const dir = await tempDir();
    await put(dir, 'app.yaml', [service('web', 80)]);
    await put(dir, 'team/b.yaml', [service('b', 80)]);
    const h = await start(dir, { rescanMs: 600_000 });
    let port = 80;
    for (let round = 0; round < 3; round++) {
      for (const [rel, name] of [['app.yaml', 'web'], ['team/b.yaml', 'b']] as const) {
        const want = ++port;
        await put(dir, `${rel}.tmp`, [service(name, want)]);
        await rename(join(dir, `${rel}.tmp`), join(dir, rel));
        await applied(`${rel} replaced by rename`, () => servicePort(h.store, `default/${name}`) === want);
        const next = ++port;
        await put(dir, rel, [service(name, next)]); // in place: same inode, truncated and rewritten
        await applied(`${rel} written in place after the rename`, () => servicePort(h.store, `default/${name}`) === next);
      }
    }
  });

  test('a directory moved into the tree is watched: a later in-place write in it is applied', async () => {
    const dir = await tempDir();
    const outside = await tempDir();
    const h = await start(dir, { rescanMs: 600_000 });
    await put(outside, 'staged/app.yaml', [service('moved', 80)]);
    await rename(join(outside, 'staged'), join(dir, 'moved'));
    await applied('the moved-in directory is read', () => servicePort(h.store, 'default/moved') === 80);
    await put(dir, 'moved/app.yaml', [service('moved', 81)]);
    await applied('an in-place write in it is applied', () => servicePort(h.store, 'default/moved') === 81);
  });

  test('a symlinked manifest: writes to its target outside the tree are applied, also after the target is replaced', async () => {
    const dir = await tempDir();
    const outside = await tempDir();
    await put(outside, 'real.yaml', [service('linked', 80)]);
    await symlink(join(outside, 'real.yaml'), join(dir, 'linked.yaml'));
    const h = await start(dir, { rescanMs: 600_000 });
    assert.equal(servicePort(h.store, 'default/linked'), 80);
    await put(outside, 'real.yaml', [service('linked', 81)]);
    await applied('an in-place write to the target', () => servicePort(h.store, 'default/linked') === 81);
    await put(outside, '.real.yaml.tmp', [service('linked', 82)]);
    await rename(join(outside, '.real.yaml.tmp'), join(outside, 'real.yaml'));
    await applied('the target replaced by rename', () => servicePort(h.store, 'default/linked') === 82);
    await put(outside, 'real.yaml', [service('linked', 83)]);
    await applied('an in-place write to the new target', () => servicePort(h.store, 'default/linked') === 83);
  });
});

describe('ManifestDirectorySource: when watching fails', () => {
  test('fs.watch refused (inotify watch limit): logged once, and rescans every pollMs apply changes', async () => {
    const dir = await tempDir();
    await put(dir, 'app.yaml', [service('web', 80)]);
    const logs: LogLine[] = [];
    const enospc = () => {
      throw Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' });
    };
    await withFsWatch(enospc as typeof fs.watch, async () => {
      const h = await start(dir, { rescanMs: 600_000, logs });
      for (const port of [81, 82, 83]) {
        await put(dir, 'app.yaml', [service('web', port)]);
        await applied(`port ${port} by rescans`, () => servicePort(h.store, 'default/web') === port);
      }
    });
    assert.equal(logs.length, 1, JSON.stringify(logs));
    assert.equal(logs[0]!.level, 'warn');
    assert.match(logs[0]!.msg, /cannot watch the manifest directory; rescanning it every 500 ms instead/);
    assert.match(JSON.stringify(logs[0]!.obj), /ENOSPC/);
  });

  test('a watcher that emits an error is dropped and logged once; rescans carry on', async () => {
    const dir = await tempDir();
    await put(dir, 'app.yaml', [service('web', 80)]);
    const logs: LogLine[] = [];
    const real = fs.watch;
    const failing = ((...args: Parameters<typeof fs.watch>) => {
      const w = real(...args);
      setImmediate(() => w.emit('error', Object.assign(new Error('watch failed'), { code: 'EIO' })));
      return w;
    }) as typeof fs.watch;
    await withFsWatch(failing, async () => {
      const h = await start(dir, { rescanMs: 600_000, logs });
      await eventually('the error is logged', () => logs.length > 0);
      for (const port of [81, 82]) {
        await put(dir, 'app.yaml', [service('web', port)]);
        await applied(`port ${port} by rescans`, () => servicePort(h.store, 'default/web') === port);
      }
    });
    assert.deepEqual(logs.map((l) => l.level), ['warn']);
    assert.match(JSON.stringify(logs[0]!.obj), /EIO/);
  });

  test('the directory deleted: its objects are kept and the problem reported; recreated, it is read and watched again', async () => {
    const parent = await tempDir();
    const dir = join(parent, 'manifests');
    await put(dir, 'app.yaml', [service('web', 80)]);
    const logs: LogLine[] = [];
    const h = await start(dir, { rescanMs: 600_000, logs });
    await rm(dir, { recursive: true });
    await eventually('the problem is reported', () => h.problems().some((p) => p.reason === 'ManifestDirectoryUnreadable'));
    assert.equal(servicePort(h.store, 'default/web'), 80, 'still served');
    await put(dir, 'app.yaml', [service('web', 81)]);
    await applied('the recreated directory is read', () => servicePort(h.store, 'default/web') === 81);
    await eventually('watching again', () => logs.some((l) => l.level === 'info'));
    await put(dir, 'app.yaml', [service('web', 82)]);
    await applied('a change in it is applied', () => servicePort(h.store, 'default/web') === 82);
    assert.deepEqual(logs.map((l) => l.level), ['warn', 'info']);
    assert.deepEqual(h.problems(), []);
  });
});
