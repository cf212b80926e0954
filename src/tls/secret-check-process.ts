// A child process of SecretChecks (./secret-checks.ts): checks the PEM pairs of each
// batch it is sent over IPC and answers with the results, in order.
import { checkPems, type PemCheck } from './pem-check.ts';

export interface CheckBatch {
  readonly id: number;
  /** [tls.crt, tls.key] */
  readonly pems: readonly (readonly [string, string])[];
}

export interface CheckedBatch {
  readonly id: number;
  readonly checks: readonly PemCheck[];
}

process.on('message', (batch: CheckBatch) => {
  process.send!({ id: batch.id, checks: batch.pems.map(([cert, key]) => checkPems(cert, key)) } satisfies CheckedBatch);
});
