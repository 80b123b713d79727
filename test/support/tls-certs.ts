/**
 * Certificates for TLS tests, made with openssl at test time: a CA of the test's own and
 * certificates it signs (EC P-256, PEM, keys unencrypted PKCS#8, which Kafka's PEM stores read).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { runProcess } from './processes.js';

export interface IssuedCert {
  certFile: string;
  keyFile: string;
  /** Key and certificate in one file: a Kafka PEM keystore (ssl.keystore.type=PEM). */
  keystoreFile: string;
  /** The serial number in hex, as Node's getPeerCertificate() prints it. */
  serial: string;
}

export interface TestCa {
  /** The CA certificate (PEM): a truststore for Kafka, `ca` for Node clients. */
  caFile: string;
  /** A certificate for 127.0.0.1 and localhost (client and server use), signed by this CA. */
  issue(name: string): Promise<IssuedCert>;
}

async function openssl(args: string[]): Promise<void> {
  const r = await runProcess('openssl', args, { timeoutMs: 30_000 }).catch((err: Error) => {
    throw new Error(`${err.message}: the TLS tests make their certificates with openssl (Debian package openssl)`);
  });
  if (r.code !== 0) throw new Error(`openssl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export async function createTestCa(dir: string, label: string): Promise<TestCa> {
  fs.mkdirSync(dir, { recursive: true });
  const caFile = path.join(dir, `${label}-ca.pem`);
  const caKey = path.join(dir, `${label}-ca.key`);
  await openssl(['req', '-x509', ...EC_KEY, '-keyout', caKey, '-out', caFile, '-days', '2', '-subj', `/CN=${label} test CA`]);
  const ext = path.join(dir, `${label}-leaf.ext`);
  fs.writeFileSync(ext, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n');
  return {
    caFile,
    async issue(name) {
      const base = path.join(dir, `${label}-${name}`);
      // 16 hex digits, the first not 0: printed the same by openssl and getPeerCertificate().
      const serial = `1${randomBytes(8).toString('hex').slice(1)}`.toUpperCase();
      await openssl(['req', ...EC_KEY, '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', `/CN=${name}`]);
      await openssl([
        'x509',
        '-req',
        '-in',
        `${base}.csr`,
        '-CA',
        caFile,
        '-CAkey',
        caKey,
        '-set_serial',
        `0x${serial}`,
        '-days',
        '2',
        '-extfile',
        ext,
        '-out',
        `${base}.pem`,
      ]);
      fs.writeFileSync(`${base}.keystore.pem`, fs.readFileSync(`${base}.key`, 'utf8') + fs.readFileSync(`${base}.pem`, 'utf8'));
      return { certFile: `${base}.pem`, keyFile: `${base}.key`, keystoreFile: `${base}.keystore.pem`, serial };
    },
  };
}

/** server.properties entries for a TLS listener (SSL or SASL_SSL) named `listener`, from PEM files. */
export function kafkaTlsListenerProperties(
  listener: string,
  server: IssuedCert,
  trustedCaFile: string,
  clientAuth: 'required' | 'none',
): Record<string, string> {
  const prefix = `listener.name.${listener.toLowerCase()}.`;
  return {
    [`${prefix}ssl.keystore.type`]: 'PEM',
    [`${prefix}ssl.keystore.location`]: server.keystoreFile,
    [`${prefix}ssl.truststore.type`]: 'PEM',
    [`${prefix}ssl.truststore.location`]: trustedCaFile,
    [`${prefix}ssl.client.auth`]: clientAuth,
  };
}
