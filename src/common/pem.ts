/**
 * CA bundles named by settings. Node takes a CA file without a single certificate in it and
 * fails every handshake later; checked here, the mistake is found when the file is read.
 */
import { X509Certificate } from 'node:crypto';

const CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** The bundle as given, once each of its certificates parses; throws when it holds none. */
export function caBundle(pem: Buffer): Buffer {
  const certificates = pem.toString('latin1').match(CERTIFICATE) ?? [];
  if (certificates.length === 0) throw new Error('the CA file holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  for (const certificate of certificates) new X509Certificate(certificate);
  return pem;
}
