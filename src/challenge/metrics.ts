// Challenge counters: plain numbers on the request path, read by prom-client at scrape
// time (with --workers, the primary adds up the workers' as for every other metric).
import { Counter, type Registry } from '../util/prom.ts';

export const challengeCounts = { issued: 0, solved: 0, failed: 0 };

/** Registers portico_challenges_{issued,solved,failed}_total on `registry` (once per process). */
export function registerChallengeMetrics(registry: Registry): void {
  const counter = (name: keyof typeof challengeCounts, help: string) => {
    let reported = 0;
    new Counter({
      name: `portico_challenges_${name}_total`,
      help,
      registers: [registry],
      collect(this: Counter) {
        const now = challengeCounts[name];
        this.inc(now - reported);
        reported = now;
      },
    });
  };
  counter('issued', 'Under-attack challenge pages served (portico.dev/under-attack).');
  counter('solved', 'Under-attack challenges solved: a clearance cookie was set.');
  counter('failed', 'Under-attack solutions refused: wrong, expired, forged, or for another host.');
}
