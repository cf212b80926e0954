// What installing a routing config costs the TLS layer of a data plane at scale: the
// certificate store's update with N TLS hosts (one certificate per two hosts, as
// 10,000 Ingresses of two hosts each), when no certificate changed (every route change
// installs the config) and when one did (told which host, and not told).
//   node_modules/.bin/node bench/certificate-store.ts [hosts=20000]
import { generate } from 'selfsigned';
import type { CertificateConfig } from '../src/model/config.ts';
import { CertificateStore } from '../src/tls/certificates.ts';
import { PatchedMap } from '../src/util/patched-map.ts';
import { median } from './lib/wrk.ts';

const HOSTS = Number(process.argv[2] ?? 20_000);
const RUNS = 20;
const pems = await generate([{ name: 'commonName', value: '*.bench.test' }], { keyType: 'ec', curve: 'P-256' });
const store = await CertificateStore.create(undefined, undefined, undefined, { cert: pems.cert, key: pems.private });

// Same PEM for every Secret: the store builds one TLS context per distinct PEM either way,
// so what is timed is the per-host work of an update, not OpenSSL.
const certificates = new Map<string, CertificateConfig>();
for (let i = 0; i < HOSTS; i++) certificates.set(`app${i}.bench.test`, { secret: `ns${i % 100}/tls${i >> 1}`, cert: pems.cert, key: pems.private });
let started = performance.now();
store.update(certificates);
console.log(`certificate store, ${HOSTS} TLS hosts`);
console.log(`  first update             ${(performance.now() - started).toFixed(1)} ms`);

const same: number[] = [];
for (let i = 0; i < RUNS; i++) {
  started = performance.now();
  store.update(certificates);
  same.push(performance.now() - started);
}
console.log(`  no certificate changed   ${median(same).toFixed(2)} ms (median of ${RUNS})`);

// One certificate changed, as the translator makes it (a patched map, one entry a new
// object): told which host (the config's delta, as the data plane passes it), and not
// told (the whole map read, as before the delta named the hosts).
let current: ReadonlyMap<string, CertificateConfig> = PatchedMap.of(certificates);
store.update(current);
for (const told of [true, false]) {
  const one: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const host = `app${(i * 7919) % HOSTS}.bench.test`;
    const next = PatchedMap.of(current).with([[host, { secret: `ns0/renewed${i}`, cert: pems.cert, key: pems.private }]]);
    started = performance.now();
    store.update(next, told ? { from: current, hosts: [host] } : undefined);
    one.push(performance.now() - started);
    current = next;
  }
  console.log(`  one certificate changed  ${median(one).toFixed(3)} ms (median of ${RUNS}; ${told ? 'told which host' : 'not told: the whole map'})`);
}
