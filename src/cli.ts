// `portico`: parse flags, pick the source (a manifest directory or the Kubernetes
// API), and wire sources -> controller -> route table -> proxy, plus the admin server.
import { FlagError, helpText, parseOptions, unknownEnvironment, type Options } from './config/flags.ts';
import { roleOf, startPortico } from './portico.ts';
import { createLogger } from './util/log.ts';

export async function main(argv: string[]): Promise<void> {
  let options: Options;
  try {
    options = parseOptions(argv);
  } catch (err) {
    if (err instanceof FlagError) {
      process.stderr.write(`portico: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (options.help) {
    process.stdout.write(helpText() + '\n');
    return;
  }
  // A JSON log line like every other, not plain text among them.
  const log = createLogger(options.logLevel);
  const role = roleOf(options);
  if (role !== 'worker') for (const name of unknownEnvironment()) log.warn({ variable: name }, `$${name} is not a portico setting and is ignored (see --help)`);

  let instance: Awaited<ReturnType<typeof startPortico>>;
  try {
    instance = await startPortico(options, log, role);
  } catch (err) {
    // Startup errors a user can cause (port in use, missing directory, bad kubeconfig,
    // unreadable certificate) get one line, not a stack trace.
    process.stderr.write(`portico: ${(err as Error).message}\n`);
    process.exit(1);
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      // A second Ctrl-C (or SIGTERM) means now, not after the grace period.
      instance.log.warn({ signal }, 'second signal: exiting without waiting for requests in flight');
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }
    stopping = true;
    if (role !== 'worker') instance.log.info({ signal, graceMs: options.shutdownGrace }, 'shutting down: no new connections, finishing requests in flight');
    instance.stop(options.shutdownGrace).then(
      () => process.exit(0),
      (err: unknown) => {
        instance.log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // Started by a parent over an IPC channel (npm start's examples/start.ts): when that
  // parent is gone, even killed with SIGKILL, the channel closes and portico stops too,
  // instead of holding the ports as an orphan.
  if (process.channel !== undefined) {
    process.channel.unref();
    process.once('disconnect', () => shutdown('parent exited'));
  }
}
