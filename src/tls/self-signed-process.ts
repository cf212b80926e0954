// Run as a child process by generateSelfSigned() (./certificates.ts): writes a new
// self-signed default certificate to stdout as JSON { cert, key }. A process of its own
// because the library and the WebCrypto code it runs would stay in portico's memory
// (about 20 MB) for one certificate made once at start.
import { generate } from 'selfsigned';
import { DEFAULT_CERTIFICATE_CN } from './certificates.ts';

const notBeforeDate = new Date();
const notAfterDate = new Date(notBeforeDate.getTime() + 365 * 24 * 3600 * 1000);
const pems = await generate([{ name: 'commonName', value: DEFAULT_CERTIFICATE_CN }], {
  keyType: 'ec',
  curve: 'P-256',
  algorithm: 'sha256',
  notBeforeDate,
  notAfterDate,
  extensions: [
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
  ],
});
process.stdout.write(JSON.stringify({ cert: pems.cert, key: pems.private }));
