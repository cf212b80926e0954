// Child processes the bench starts, optionally pinned to a CPU core, all stopped
// at the end (or on Ctrl-C) whatever happened in between.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, constants, existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export interface Managed {
  name: string;
  child: ChildProcess;
  /** Resolves with the exit code (or 128+signal) once the process is gone. */
  exited: Promise<number>;
}

const running = new Set<Managed>();
/** Set by stopAll: nothing new starts while (or after) everything is being stopped. */
let stopping = false;

function refuseWhileStopping(name: string): void {
  if (stopping) throw new Error(`not starting ${name}: stopping`);
}

let tasksetUsable: boolean | undefined;
/** taskset exists and the machine has the two cores the layout needs. */
export function canPin(): boolean {
  tasksetUsable ??= availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0;
  return tasksetUsable;
}

/** Prefixes `taskset -c <core>` when pinning is possible. */
export function pinned(core: number | undefined, command: string, args: string[]): [string, string[]] {
  return core !== undefined && canPin() ? ['taskset', ['-c', String(core), command, ...args]] : [command, args];
}

/**
 * Starts a long-running process; its stdout and stderr go to `logFile`.
 * taskset execs the command, so the pid is the command's own.
 * With `pipeCore`, they go into a pipe that `cat`, pinned to that core, copies to the
 * file: a container runtime's shape, where a pod's stdout is a pipe read on another core.
 */
export function startProcess(name: string, command: string, args: string[], opts: { core?: number; logFile: string; env?: NodeJS.ProcessEnv; pipeCore?: number }): Managed {
  refuseWhileStopping(name);
  const [cmd, argv] = pinned(opts.core, command, args);
  // The process writes its output to the file itself: relayed through this process, a
  // busy access log would cost the bench's own CPU, on whichever core it runs.
  const fd = openSync(opts.logFile, 'a');
  let out = fd;
  if (opts.pipeCore !== undefined) {
    // A named pipe, as a runtime's (a stdio 'pipe' from spawn is a socket pair, which the
    // proxies write to differently and nginx cannot open as /dev/stdout). Opened read-write,
    // so that opening it does not wait for cat; cat ends once the child's side is closed.
    const fifo = `${opts.logFile}.pipe`;
    if (!existsSync(fifo) && spawnSync('mkfifo', [fifo]).status !== 0) throw new Error(`mkfifo ${fifo} failed`);
    const [catCmd, catArgv] = pinned(opts.pipeCore, 'cat', [fifo]);
    spawn(catCmd, catArgv, { stdio: ['ignore', fd, fd] });
    out = openSync(fifo, constants.O_RDWR);
  }
  const child = spawn(cmd, argv, { stdio: ['ignore', out, out], env: opts.env ?? process.env });
  if (out !== fd) closeSync(out);
  closeSync(fd);
  const log = { write: (text: string) => appendFileSync(opts.logFile, text), end: () => {} };
  const managed: Managed = {
    name,
    child,
    exited: new Promise((resolve) => {
      child.once('error', (err) => {
        log.write(`${name}: ${err.message}\n`);
        resolve(127);
      });
      child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? 15 : 0)));
    }),
  };
  void managed.exited.then(() => {
    running.delete(managed);
    log.end();
  });
  running.add(managed);
  return managed;
}

/** Runs a command to completion, collecting its output. */
export async function run(command: string, args: string[], core?: number): Promise<{ code: number; stdout: string; stderr: string }> {
  refuseWhileStopping(command);
  const [cmd, argv] = pinned(core, command, args);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const managed: Managed = {
    name: command,
    child,
    exited: new Promise((resolve) => {
      child.once('error', (err) => {
        stderr += err.message;
        resolve(127);
      });
      child.once('close', (code, signal) => resolve(code ?? 128 + (signal ? 15 : 0)));
    }),
  };
  running.add(managed);
  const code = await managed.exited;
  running.delete(managed);
  return { code, stdout, stderr };
}

/** SIGTERM (a fast, clean stop for nginx, wrk and portico alike), then SIGKILL after a grace period. */
export async function stopProcess(m: Managed, graceMs = 3000): Promise<void> {
  if (m.child.exitCode !== null || m.child.signalCode !== null) return;
  m.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const killed = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      m.child.kill('SIGKILL');
      resolve();
    }, graceMs);
  });
  await Promise.race([m.exited, killed]);
  clearTimeout(timer);
}

export async function stopAll(): Promise<void> {
  stopping = true;
  await Promise.all([...running].map((m) => stopProcess(m)));
}

/** A process and all its descendants (nginx's workers, portico's), from /proc; [] without /proc. */
export function processTree(pid: number): number[] {
  if (!existsSync(`/proc/${pid}`)) return [];
  const out: number[] = [];
  const visit = (p: number): void => {
    out.push(p);
    for (const task of safeReaddir(`/proc/${p}/task`)) {
      const list = readProc(`/proc/${p}/task/${task}/children`) ?? '';
      for (const child of list.split(' ')) if (child !== '') visit(Number(child));
    }
  };
  visit(pid);
  return out;
}

/**
 * CPU seconds (user + system) used so far by a process and all its descendants; undefined
 * where /proc is not there. CPU per request is steadier than req/s on a shared machine:
 * other load slows a proxy down, but it does not make each request cost more cycles (much).
 */
export function cpuSeconds(pid: number): number | undefined {
  const ticksPerSecond = 100; // USER_HZ, 100 on every Linux architecture that matters here
  const tree = processTree(pid);
  if (tree.length === 0) return undefined;
  let ticks = 0;
  for (const p of tree) {
    const stat = readProc(`/proc/${p}/stat`);
    if (stat === undefined) continue;
    // Fields after the command name (which may hold spaces) in parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
  }
  return ticks / ticksPerSecond;
}

/** Resident memory (bytes) of one process; 0 when it is gone. */
export function processRss(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readProc(`/proc/${pid}/status`) ?? '')?.[1] ?? 0) * 1024;
}

/** Resident memory (bytes) of a process and its descendants; undefined without /proc. */
export function rssBytes(pid: number): number | undefined {
  const tree = processTree(pid);
  return tree.length === 0 ? undefined : tree.reduce((sum, p) => sum + processRss(p), 0);
}

function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined; // the process is gone, or this is not Linux
  }
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
