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
 * The order the targets run in within a round: as given in odd rounds, reversed in even
 * ones. A fixed order favours one position (on this machine the second portico of an A/B
 * was 10-20% cheaper per request whichever checkout it was), so each target takes each
 * position equally often over an even number of rounds.
 */
export function roundOrder<T>(targets: readonly T[], round: number): T[] {
  return round % 2 === 1 ? [...targets] : [...targets].reverse();
}

/** A bench option that must be a positive integer ("8", or "8s" for seconds); throws naming the flag. */
export function positiveInteger(name: string, raw: string): number {
  const n = Number(raw.replace(/s$/, ''));
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: expected a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}
