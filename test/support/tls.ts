// TLS helpers for tests that check which certificate portico serves.
import tls from 'node:tls';

/** The SHA-256 fingerprint of the certificate served on 127.0.0.1:`port` for `servername` (a fresh handshake). */
export function servedFingerprint(port: number, servername: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const socket = tls.connect({ port, host: '127.0.0.1', servername, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}
