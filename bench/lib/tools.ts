// What every bench needs before it starts: the Debian tools it drives (installed with
// apt-get on first use, as CI runs as root) and free loopback ports.
import { spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';

export function have(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** Installs `packages` with apt-get unless every one of `commands` is already there. */
export function ensureTools(commands: readonly string[], packages: readonly string[]): void {
  if (commands.every(have)) return;
  console.log(`installing ${packages.join(', ')} with apt-get ...`);
  const install = () => spawnSync('apt-get', ['install', '-y', ...packages], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0;
  if (!install()) {
    spawnSync('apt-get', ['update'], { stdio: 'inherit' });
    if (!install()) throw new Error(`could not install ${packages.join(', ')} (apt-get install -y ${packages.join(' ')} failed; are you root?)`);
  }
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The order the targets run in within a round: as given in odd rounds; in even ones two
 * targets swap, and of three or more the first keeps its place and the others are
 * reversed. A fixed order favours one position (on this machine the second portico of an
 * A/B was 10-20% cheaper per request whichever checkout it was). Reversing all three
 * (nginx, portico, portico-b) was no cure: portico stayed in the middle, and the targets
 * at the ends ran twice in a row across rounds; portico came out 12-13% dearer per request
 * than portico-b whichever checkout each was (two runs with the checkouts swapped,
 * 2026-11-28, load 5-7). Now portico and portico-b take each position equally often, each
 * after nginx in half the rounds, and no target runs twice in a row.
 */
export function roundOrder<T>(targets: readonly T[], round: number): T[] {
  if (round % 2 === 1) return [...targets];
  if (targets.length <= 2) return [...targets].reverse();
  return [targets[0]!, ...targets.slice(1).reverse()];
}

/** A bench option that must be a positive integer ("8", or "8s" for seconds); throws naming the flag. */
export function positiveInteger(name: string, raw: string): number {
  const n = Number(raw.replace(/s$/, ''));
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: expected a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}
