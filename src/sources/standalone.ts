// Standalone mode's source: a directory of YAML/JSON manifests, read recursively and
// watched, feeding the ObjectStore as the Kubernetes API would.
//
// - Objects are tracked per file. A changed file replaces its objects; a deleted file
//   removes them.
// - A file that stops parsing keeps serving the objects last read from it, and one
//   rejected object keeps its last good version, as the API server would keep the
//   stored object when an update is rejected.
// - Two files defining the same object: the first in sorted path order wins.
// - Changes are noticed by fs.watch (recursive), debounced, plus a cheap periodic
//   rescan of mtimes and sizes for editors that replace files and for missed events.
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { Problem } from '../model/config.ts';
import { objectKey, type KubeObject, type RoutingKind } from '../model/k8s.ts';
import { isManifestFile, parseManifestFile, type ManifestError } from './manifests.ts';
import { deepEqual, type ObjectStore } from './store.ts';

export interface ManifestDirectorySourceOptions {
  dir: string;
  store: Pick<ObjectStore, 'upsert' | 'delete'>;
  /** The full list of file problems, each time it changes (and once after the first load). */
  onProblems?: (problems: readonly Problem[]) => void;
  /** Quiet time after a file event before reading, in ms. */
  debounceMs?: number;
  /** Interval of the safety-net rescan, in ms. */
  rescanMs?: number;
  /** Use fs.watch (default true); without it, only the periodic rescan notices changes. */
  watch?: boolean;
}

/** Manifests larger than this are refused rather than read into memory. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

interface StoredObject {
  readonly object: KubeObject;
  readonly line: number | undefined;
}

interface FileEntry {
  /** Changes when the file is written or replaced. */
  readonly stamp: string;
  /** The objects served from this file (its last good content), by identity. */
  readonly objects: ReadonlyMap<string, StoredObject>;
  readonly errors: readonly ManifestError[];
}

interface FoundFile {
  readonly path: string;
  readonly stamp: string;
  readonly size: number;
}

/** "Kind/ns/name": what makes two definitions the same object. */
function identity(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}/${objectKey(namespace, name)}`;
}

function identityOf(obj: KubeObject): string {
  return identity(obj.kind, obj.metadata.namespace, obj.metadata.name);
}

function describeObject(obj: KubeObject): string {
  return `${obj.kind} ${objectKey(obj.metadata.namespace, obj.metadata.name)}`;
}

function where(file: string, line: number | undefined): string {
  return line === undefined ? file : `${file}:${line}`;
}

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

class DirectoryGone extends Error {}

export class ManifestDirectorySource {
  /** Resolves after the first full load (rejects if start() failed). */
  readonly ready: Promise<void>;
  private readonly o: Required<Omit<ManifestDirectorySourceOptions, 'onProblems'>> & Pick<ManifestDirectorySourceOptions, 'onProblems'>;
  private readonly files = new Map<string, FileEntry>();
  /** What this source put in the store, by identity. */
  private readonly applied = new Map<string, KubeObject>();
  /** Files named by watch events since the last scan: re-read even if their stamp looks unchanged. */
  private dirty = new Set<string>();
  private dirProblem: Problem | undefined;
  private reportedProblems: string | undefined;
  private watcher: FSWatcher | undefined;
  private debounceTimer: NodeJS.Timeout | undefined;
  private rescanTimer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private scanAgain = false;
  private stopped = false;
  private settleReady!: (err?: Error) => void;

  constructor(options: ManifestDirectorySourceOptions) {
    this.o = { debounceMs: 100, rescanMs: 2000, watch: true, ...options };
    this.ready = new Promise<void>((resolve, reject) => {
      this.settleReady = (err) => (err ? reject(err) : resolve());
    });
    this.ready.catch(() => {}); // start() reports the failure to its caller
  }

  /** Loads every manifest under the directory, then watches it. Throws if the directory does not exist. */
  async start(): Promise<void> {
    try {
      await this.checkDirectory();
      await this.scan();
    } catch (err) {
      this.settleReady(err as Error);
      throw err;
    }
    this.settleReady();
    if (this.stopped) return; // stop() during the first load: nothing to watch
    this.startWatcher();
    this.rescanTimer = setInterval(() => this.requestScan(), this.o.rescanMs);
    this.rescanTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    this.watcher?.close();
    this.watcher = undefined;
    clearTimeout(this.debounceTimer);
    clearInterval(this.rescanTimer);
  }

  /** Current problems with the manifest files. */
  problems(): Problem[] {
    const problems: Problem[] = [];
    if (this.dirProblem) problems.push(this.dirProblem);
    for (const path of [...this.files.keys()].sort()) {
      for (const e of this.files.get(path)!.errors) {
        problems.push({ object: { kind: 'File', name: path }, severity: 'error', reason: 'InvalidManifest', message: `${where(path, e.line)}: ${e.message}` });
      }
    }
    problems.push(...this.resolve().duplicates);
    return problems;
  }

  private async checkDirectory(): Promise<void> {
    let isDirectory: boolean;
    try {
      isDirectory = (await stat(this.o.dir)).isDirectory();
    } catch (err) {
      if (errorCode(err) === 'ENOENT') throw new Error(`--manifests ${this.o.dir}: no such directory`);
      throw new Error(`--manifests ${this.o.dir}: ${(err as Error).message}`);
    }
    if (!isDirectory) throw new Error(`--manifests ${this.o.dir}: not a directory`);
  }

  // ---- change detection ----

  private startWatcher(): void {
    if (this.watcher || this.stopped || !this.o.watch) return;
    try {
      const watcher = watch(this.o.dir, { recursive: true, persistent: false }, (_event, filename) => {
        if (filename) this.dirty.add(String(filename).split(sep).join('/'));
        this.scheduleScan();
      });
      // A watcher that fails (directory removed, inotify limit) is dropped; the rescan recreates it.
      watcher.on('error', () => {
        watcher.close();
        if (this.watcher === watcher) this.watcher = undefined;
      });
      this.watcher = watcher;
    } catch {
      this.watcher = undefined; // rescans alone still pick up changes
    }
  }

  private scheduleScan(): void {
    if (this.debounceTimer || this.stopped) return;
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      this.requestScan();
    }, this.o.debounceMs);
  }

  /** Runs a scan now, or right after the one in progress. */
  private requestScan(): void {
    if (this.stopped) return;
    if (this.scanning) {
      this.scanAgain = true;
      return;
    }
    this.scanning = this.scan()
      .catch((err: unknown) => {
        // Unexpected (a bug or an unreadable tree): keep serving, say so.
        this.setDirProblem(`cannot read the manifest directory: ${(err as Error).message}`);
      })
      .finally(() => {
        this.scanning = undefined;
        if (this.scanAgain) {
          this.scanAgain = false;
          this.requestScan();
        }
      });
    if (!this.watcher) this.startWatcher();
  }

  // ---- scanning ----

  private async scan(): Promise<void> {
    const forced = this.dirty;
    this.dirty = new Set();
    let found: Map<string, FoundFile>;
    try {
      found = await this.walk();
    } catch (err) {
      if (!(err instanceof DirectoryGone)) throw err;
      // Keep serving what was read: an emptied mount or a moved directory is more likely a mistake than an intent.
      this.setDirProblem(`${this.o.dir}: the directory is gone; still serving the objects last read from it`);
      this.report();
      return;
    }
    this.dirProblem = undefined;

    const updates = new Map<string, FileEntry | undefined>();
    for (const [path, file] of found) {
      const entry = this.files.get(path);
      if (entry && entry.stamp === file.stamp && !forced.has(path)) continue;
      const next = await this.readEntry(path, file, entry);
      if (next) updates.set(path, next);
      else updates.set(path, undefined); // vanished between listing and reading
    }
    for (const path of this.files.keys()) if (!found.has(path)) updates.set(path, undefined);
    if (this.stopped) return;

    for (const [path, entry] of updates) {
      if (entry) this.files.set(path, entry);
      else this.files.delete(path);
    }
    this.apply();
    this.report();
  }

  /** Every manifest file under the directory, by path relative to it ("/"-separated). */
  private async walk(): Promise<Map<string, FoundFile>> {
    const root = this.o.dir;
    const found = new Map<string, FoundFile>();
    const visited = new Set<string>();
    let rootStat;
    try {
      rootStat = await stat(root);
    } catch (err) {
      if (errorCode(err) === 'ENOENT' || errorCode(err) === 'ENOTDIR') throw new DirectoryGone();
      throw err;
    }
    if (!rootStat.isDirectory()) throw new DirectoryGone();
    visited.add(`${rootStat.dev}:${rootStat.ino}`);

    const visit = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (dir === root && errorCode(err) === 'ENOENT') throw new DirectoryGone();
        return; // a subdirectory removed meanwhile, or unreadable: its files count as gone
      }
      for (const entry of entries) {
        if (entry.name.startsWith('.')) continue; // dotfiles, editor swap files, .git
        const path = join(dir, entry.name);
        if (!entry.isDirectory() && !entry.isSymbolicLink() && !(entry.isFile() && isManifestFile(entry.name))) continue;
        let st;
        try {
          st = await stat(path); // follows symlinks
        } catch {
          continue; // dangling link or removed meanwhile
        }
        if (st.isDirectory()) {
          const id = `${st.dev}:${st.ino}`;
          if (visited.has(id)) continue; // symlink loop, or the same tree linked twice
          visited.add(id);
          await visit(path);
        } else if (st.isFile() && isManifestFile(entry.name)) {
          const rel = relative(root, path).split(sep).join('/');
          found.set(rel, { path, size: st.size, stamp: `${st.mtimeMs}|${st.ctimeMs}|${st.size}|${st.dev}:${st.ino}` });
        }
      }
    };
    await visit(root);
    return found;
  }

  /** Reads and parses one file into its next entry; undefined if it is gone. */
  private async readEntry(rel: string, file: FoundFile, previous: FileEntry | undefined): Promise<FileEntry | undefined> {
    if (file.size > MAX_FILE_BYTES) {
      return { stamp: file.stamp, objects: previous?.objects ?? new Map(), errors: [{ file: rel, message: `larger than ${MAX_FILE_BYTES / 1024 / 1024} MiB; not read` }] };
    }
    let text: string;
    try {
      text = await readFile(file.path, 'utf8');
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return undefined;
      return { stamp: file.stamp, objects: previous?.objects ?? new Map(), errors: [{ file: rel, message: `cannot read: ${(err as Error).message}` }] };
    }
    const parsed = parseManifestFile(rel, text);
    // A file that does not parse as a whole keeps serving its last good content.
    if (parsed.failed) return { stamp: file.stamp, objects: previous?.objects ?? new Map(), errors: parsed.errors };

    const objects = new Map<string, StoredObject>();
    const errors: ManifestError[] = [...parsed.errors];
    parsed.objects.forEach((object, i) => {
      const id = identityOf(object);
      const line = parsed.lines[i];
      const first = objects.get(id);
      if (first) {
        errors.push({ file: rel, line, message: `${describeObject(object)} is already defined at line ${first.line ?? '?'} of this file; this definition is ignored` });
        return;
      }
      // Same content as before: keep the old object, so everything memoized on it stays valid.
      const before = previous?.objects.get(id)?.object;
      objects.set(id, { object: before && deepEqual(before, object) ? before : object, line });
    });
    // A rejected object keeps its last good version.
    for (const e of parsed.errors) {
      if (!e.ref) continue;
      const id = identity(e.ref.kind, e.ref.namespace, e.ref.name);
      const before = previous?.objects.get(id);
      if (before && !objects.has(id)) objects.set(id, before);
    }
    errors.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
    return { stamp: file.stamp, objects, errors };
  }

  // ---- applying ----

  /** Which file serves each object (first in path order), and the duplicates that lost. */
  private resolve(): { winners: Map<string, KubeObject>; duplicates: Problem[] } {
    const winners = new Map<string, KubeObject>();
    const firstAt = new Map<string, string>();
    const duplicates: Problem[] = [];
    for (const path of [...this.files.keys()].sort()) {
      for (const [id, { object, line }] of this.files.get(path)!.objects) {
        const first = firstAt.get(id);
        if (first !== undefined) {
          duplicates.push({
            object: { kind: 'File', name: path },
            severity: 'warning',
            reason: 'DuplicateObject',
            message: `${where(path, line)}: ${describeObject(object)} is already defined in ${first}; this definition is ignored`,
          });
          continue;
        }
        firstAt.set(id, where(path, line));
        winners.set(id, object);
      }
    }
    return { winners, duplicates };
  }

  /** Brings the store in line with the files. */
  private apply(): void {
    const { winners } = this.resolve();
    const { store } = this.o;
    for (const [id, object] of this.applied) {
      if (winners.has(id)) continue;
      store.delete(object.kind as RoutingKind, objectKey(object.metadata.namespace, object.metadata.name));
      this.applied.delete(id);
    }
    for (const [id, object] of winners) {
      if (this.applied.get(id) === object) continue;
      store.upsert(object);
      this.applied.set(id, object);
    }
  }

  private setDirProblem(message: string): void {
    this.dirProblem = { object: { kind: 'File', name: '.' }, severity: 'error', reason: 'ManifestDirectoryUnreadable', message };
    this.report();
  }

  /** Calls onProblems when the list changed (and after the first load). */
  private report(): void {
    if (this.stopped) return;
    const problems = this.problems();
    const signature = JSON.stringify(problems);
    if (signature === this.reportedProblems) return;
    this.reportedProblems = signature;
    this.o.onProblems?.(problems);
  }
}
