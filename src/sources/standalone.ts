// Standalone mode's source: a directory of YAML/JSON manifests, read recursively and
// watched, feeding the ObjectStore as the Kubernetes API would.
//
// - Objects are tracked per file. A changed file replaces its objects; a deleted file
//   removes them.
// - A file that stops parsing keeps serving the objects last read from it, and one
//   rejected object keeps its last good version, as the API server would keep the
//   stored object when an update is rejected.
// - Two files defining the same object: the first in sorted path order wins.
// - Changes are noticed by watching each directory, not each file: a file replaced by
//   rename (sed -i, mv, editors' safe-write) would leave a file's watch on the old inode,
//   so later writes went unseen (Node's recursive fs.watch on Linux watches each file).
//   Events are debounced. A periodic rescan of mtimes and sizes catches missed events
//   (network filesystems), and runs more often while watching fails.
import { stat as statCallback, watch, type FSWatcher, type Stats } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
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
  /** Interval of the safety-net rescan while the directory is watched, in ms. */
  rescanMs?: number;
  /** Interval of the rescan when it is not (watch: false, or fs.watch failed), in ms. */
  pollMs?: number;
  /** Use fs.watch (default true); without it, only the periodic rescan notices changes. */
  watch?: boolean;
  /** Says when watching fails and when it works again. */
  log?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

/** Manifests larger than this are refused rather than read into memory. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/** Concurrent stats in a walk: hides the thread-pool round trip without flooding it. */
const STAT_BATCH = 64;

/** Rescans wait at least this many times the last walk, so they stay under ~20% of a core. */
const RESCAN_COST_FACTOR = 4;

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

interface DirWatch {
  readonly watcher: FSWatcher;
  /** Path relative to the root as last walked; undefined if watched only as a symlink's target. */
  rel: string | undefined;
  /** The walk that last saw the directory. */
  walk: number;
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

/** fs.stat with a callback: about half the CPU of fs.promises.stat, which counts at thousands of files. */
function statOrUndefined(path: string): Promise<Stats | undefined> {
  return new Promise((resolve) => statCallback(path, (err, st) => resolve(err ? undefined : st)));
}

class DirectoryGone extends Error {}

export class ManifestDirectorySource {
  /** Resolves after the first full load (rejects if start() failed). */
  readonly ready: Promise<void>;
  private readonly o: Required<Omit<ManifestDirectorySourceOptions, 'onProblems' | 'log'>> & Pick<ManifestDirectorySourceOptions, 'onProblems' | 'log'>;
  private readonly files = new Map<string, FileEntry>();
  /** What this source put in the store, by identity. */
  private readonly applied = new Map<string, KubeObject>();
  /** Files named by watch events since the last scan: re-read even if their stamp looks unchanged. */
  private dirty = new Set<string>();
  private dirProblem: Problem | undefined;
  private reportedProblems: string | undefined;
  /** One watch per directory, by "dev:ino". */
  private readonly watches = new Map<string, DirWatch>();
  /** Directories whose watcher failed: polled from then on rather than re-watched and failing again. */
  private readonly unwatchable = new Set<string>();
  /** Why part of the tree is not watched, while that lasts (rescans then run every pollMs). */
  private unwatched: string | undefined;
  private walks = 0;
  private lastWalkMs = 0;
  private debounceTimer: NodeJS.Timeout | undefined;
  private rescanTimer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private scanAgain = false;
  private stopped = false;
  private settleReady!: (err?: Error) => void;

  constructor(options: ManifestDirectorySourceOptions) {
    this.o = { debounceMs: 100, rescanMs: 2000, pollMs: 500, watch: true, ...options };
    this.ready = new Promise<void>((resolve, reject) => {
      this.settleReady = (err) => (err ? reject(err) : resolve());
    });
    this.ready.catch(() => {}); // start() reports the failure to its caller
  }

  /** Loads every manifest under the directory and watches it. Throws if the directory does not exist. */
  async start(): Promise<void> {
    try {
      await this.checkDirectory();
      await this.serialized(); // the first walk also sets up the watches
    } catch (err) {
      this.stop();
      this.settleReady(err as Error);
      throw err;
    }
    this.settleReady();
  }

  stop(): void {
    this.stopped = true;
    this.closeWatches(() => true);
    clearTimeout(this.debounceTimer);
    clearTimeout(this.rescanTimer);
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

  /** Watches one directory, before it is listed, so that no change after the listing goes unseen. */
  private watchDir(id: string, path: string, rel: string | undefined, walk: number, failures: string[]): void {
    if (!this.o.watch || this.stopped) return;
    const known = this.watches.get(id);
    if (known) {
      if (known.walk !== walk || rel !== undefined) known.rel = rel;
      known.walk = walk;
      return;
    }
    if (this.unwatchable.has(id)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(path, { persistent: false }, (_event, name) => {
        const dirRel = this.watches.get(id)?.rel;
        if (name && dirRel !== undefined) this.dirty.add(dirRel ? `${dirRel}/${name}` : String(name));
        this.scheduleScan();
      });
    } catch (err) {
      const code = errorCode(err);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') failures.push(`${path}: ${code ?? (err as Error).message}`); // else gone meanwhile
      return;
    }
    watcher.on('error', (err: Error) => {
      watcher.close();
      if (this.watches.get(id)?.watcher === watcher) this.watches.delete(id);
      this.unwatchable.add(id);
      this.setUnwatched(`${path}: ${errorCode(err) ?? err.message}`);
    });
    this.watches.set(id, { watcher, rel, walk });
  }

  private closeWatches(which: (w: DirWatch) => boolean): void {
    for (const [id, w] of this.watches) {
      if (!which(w)) continue;
      w.watcher.close();
      this.watches.delete(id);
    }
  }

  /** Enters (reason) or leaves (undefined) polling mode, saying so once per change. */
  private setUnwatched(reason: string | undefined): void {
    if (!this.o.watch || this.stopped) return;
    const was = this.unwatched;
    this.unwatched = reason;
    if (was === undefined && reason !== undefined) {
      this.o.log?.warn({ dir: this.o.dir, reason }, `cannot watch the manifest directory; rescanning it every ${this.o.pollMs} ms instead`);
      this.scheduleRescan(); // sooner than the safety-net interval
    } else if (was !== undefined && reason === undefined) {
      this.o.log?.info({ dir: this.o.dir }, 'watching the manifest directory again');
    }
  }

  private scheduleScan(): void {
    if (this.debounceTimer || this.stopped) return;
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      this.requestScan();
    }, this.o.debounceMs);
  }

  /** Sets the next periodic rescan, counted from the end of the last scan. */
  private scheduleRescan(): void {
    clearTimeout(this.rescanTimer);
    if (this.stopped) return;
    const polling = !this.o.watch || this.unwatched !== undefined;
    const every = polling ? Math.min(this.o.pollMs, this.o.rescanMs) : this.o.rescanMs;
    this.rescanTimer = setTimeout(() => this.requestScan(), Math.max(every, RESCAN_COST_FACTOR * this.lastWalkMs));
    this.rescanTimer.unref();
  }

  /** Runs a scan now, or right after the one in progress. */
  private requestScan(): void {
    if (this.stopped) return;
    if (this.scanning) {
      this.scanAgain = true;
      return;
    }
    this.serialized().catch((err: unknown) => {
      // Unexpected (a bug or an unreadable tree): keep serving, say so.
      this.setDirProblem(`cannot read the manifest directory: ${(err as Error).message}`);
    });
  }

  /** One scan at a time: the first load too, so that an early event cannot race it. */
  private async serialized(): Promise<void> {
    const scan = this.scan();
    this.scanning = scan;
    try {
      await scan;
    } finally {
      this.scanning = undefined;
      if (this.scanAgain) {
        this.scanAgain = false;
        this.requestScan();
      }
      this.scheduleRescan();
    }
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
      this.closeWatches(() => true); // they follow the old inodes
      this.setUnwatched('the directory is gone');
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

  /** Every manifest file under the directory, by path relative to it ("/"-separated); watches what it visits. */
  private async walk(): Promise<Map<string, FoundFile>> {
    const began = performance.now();
    const walk = ++this.walks;
    const root = this.o.dir;
    const found = new Map<string, FoundFile>();
    const visited = new Set<string>();
    const targetDirs = new Set<string>();
    const targetIds = new Set<string>();
    const failures: string[] = [];
    let rootStat;
    try {
      rootStat = await stat(root);
    } catch (err) {
      if (errorCode(err) === 'ENOENT' || errorCode(err) === 'ENOTDIR') throw new DirectoryGone();
      throw err;
    }
    if (!rootStat.isDirectory()) throw new DirectoryGone();

    // A symlinked manifest changes in its target's directory, which may lie outside the tree.
    const watchTarget = async (link: string): Promise<void> => {
      let dir;
      try {
        dir = dirname(await realpath(link));
        if (targetDirs.has(dir)) return;
        targetDirs.add(dir);
        const st = await stat(dir);
        targetIds.add(`${st.dev}:${st.ino}`);
        this.watchDir(`${st.dev}:${st.ino}`, dir, undefined, walk, failures);
      } catch {
        // gone meanwhile: the next walk sees it
      }
    };

    const visit = async (dir: string, rel: string, id: string): Promise<void> => {
      visited.add(id);
      this.watchDir(id, dir, rel, walk, failures);
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (dir === root && errorCode(err) === 'ENOENT') throw new DirectoryGone();
        return; // a subdirectory removed meanwhile, or unreadable: its files count as gone
      }
      // dotfiles, editor swap files and .git are skipped
      const candidates = entries.filter((e) => !e.name.startsWith('.') && (e.isDirectory() || e.isSymbolicLink() || (e.isFile() && isManifestFile(e.name))));
      for (let i = 0; i < candidates.length; i += STAT_BATCH) {
        const batch = candidates.slice(i, i + STAT_BATCH);
        const stats = await Promise.all(batch.map((e) => statOrUndefined(join(dir, e.name)))); // follows symlinks
        for (let j = 0; j < batch.length; j++) {
          const entry = batch[j]!;
          const st = stats[j];
          if (!st) continue; // dangling link or removed meanwhile
          const path = join(dir, entry.name);
          const entryRel = rel ? `${rel}/${entry.name}` : entry.name;
          if (st.isDirectory()) {
            const subId = `${st.dev}:${st.ino}`;
            if (visited.has(subId)) continue; // symlink loop, or the same tree linked twice
            await visit(path, entryRel, subId);
          } else if (st.isFile() && isManifestFile(entry.name)) {
            found.set(entryRel, { path, size: st.size, stamp: `${st.mtimeMs}|${st.ctimeMs}|${st.size}|${st.dev}:${st.ino}` });
            if (entry.isSymbolicLink() && this.o.watch) await watchTarget(path);
          }
        }
      }
    };
    await visit(root, '', `${rootStat.dev}:${rootStat.ino}`);

    this.closeWatches((w) => w.walk !== walk); // directories gone, moved out or replaced
    for (const id of this.unwatchable) if (visited.has(id) || targetIds.has(id)) failures.push(`directory ${id}: its watcher failed`);
    this.setUnwatched(failures.length === 0 ? undefined : failures.length === 1 ? failures[0] : `${failures[0]} (and ${failures.length - 1} more)`);
    this.lastWalkMs = performance.now() - began;
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
