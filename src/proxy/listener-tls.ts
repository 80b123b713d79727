/**
 * TLS on the client listeners (the bootstrap port and every broker port): the certificate chain
 * and key clients see and, with a client CA, mutual TLS. Rotated files reach new connections
 * without a restart (server.setSecureContext); connections already open keep their session.
 */
import tls from 'node:tls';
import type { Logger } from '../common/log.js';
import { WatchedFiles } from '../common/watched-files.js';
import { caBundle } from '../common/pem.js';

export interface ListenerTlsSettings {
  /** PEM certificate chain, the server's certificate first. */
  certFile: string;
  /** PEM private key of that certificate, unencrypted. */
  keyFile: string;
  /** PEM CA certificates; when set, clients must present a certificate they signed. */
  clientCaFile?: string;
}

function listenerTlsFiles(settings: ListenerTlsSettings): string[] {
  return [settings.certFile, settings.keyFile, ...(settings.clientCaFile ? [settings.clientCaFile] : [])];
}

/** The secure-context options of the files' contents, in listenerTlsFiles order; throws when they do not fit together. */
export function listenerContextOptions(contents: readonly Buffer[]): tls.SecureContextOptions {
  const [cert, key, ca] = contents;
  const options: tls.SecureContextOptions = { cert, key, ...(ca ? { ca: caBundle(ca) } : {}) };
  // Fails here, not at the first handshake, on a key that does not belong to the certificate.
  tls.createSecureContext(options);
  return options;
}

export class ListenerTls {
  private readonly servers = new Set<tls.Server>();
  private readonly files: WatchedFiles<tls.SecureContextOptions>;

  constructor(
    private readonly settings: ListenerTlsSettings,
    log: Logger,
  ) {
    this.files = new WatchedFiles(listenerTlsFiles(settings), listenerContextOptions, {
      log,
      what: 'listener TLS certificate, key and client CA',
      onReload: (options) => {
        for (const server of this.servers) server.setSecureContext(options);
      },
    });
  }

  /** A TLS server whose connection handler gets each client once its handshake is done. */
  createServer(onConnection: (socket: tls.TLSSocket) => void): tls.Server {
    const mutual = this.settings.clientCaFile !== undefined;
    const server = tls.createServer({ ...this.files.value, requestCert: mutual, rejectUnauthorized: mutual }, onConnection);
    this.servers.add(server);
    server.once('close', () => this.servers.delete(server));
    return server;
  }

  close(): void {
    this.files.close();
  }
}
