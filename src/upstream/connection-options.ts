/**
 * How kcompact reaches the upstream store: one object for both threads, built once from the
 * settings. Each thread turns it into its own connector and client, since a thread cannot share
 * another's sockets or watched files.
 */
import type { HostPort } from '../common/host-port.js';
import type { Logger } from '../common/log.js';
import { UpstreamClusterClient } from './upstream-cluster-client.js';
import type { UpstreamConnector, UpstreamSecurity } from './upstream-connector.js';

export interface ConnectionOptions {
  /** The bootstrap addresses (the upstream setting). */
  upstream: readonly HostPort[];
  /** Largest frame read or written (the maxFrameBytes setting). */
  maxFrameBytes: number;
  /** Timeout of kcompact's own requests to the upstream. */
  requestTimeoutMs: number;
  /** TLS and SASL; plain TCP without SASL when empty. */
  security: UpstreamSecurity;
}

/** Everything but the address, which has no default. */
export const DEFAULT_CONNECTION: Readonly<Omit<ConnectionOptions, 'upstream'>> = {
  maxFrameBytes: 100 * 1024 * 1024,
  requestTimeoutMs: 30_000,
  security: {},
};

/** The address, and any other option to change. */
export type ConnectionOptionsGiven = Pick<ConnectionOptions, 'upstream'> & Partial<ConnectionOptions>;

/** The connection's options with the defaults above for what is not given (tests; the proxy gives all). */
export function connectionOptions(given: ConnectionOptionsGiven): ConnectionOptions {
  return {
    upstream: given.upstream,
    maxFrameBytes: given.maxFrameBytes ?? DEFAULT_CONNECTION.maxFrameBytes,
    requestTimeoutMs: given.requestTimeoutMs ?? DEFAULT_CONNECTION.requestTimeoutMs,
    security: given.security ?? DEFAULT_CONNECTION.security,
  };
}

/**
 * A client of the upstream cluster with these options. The client id names the client's role
 * (kcompact, kcompact-indexer, ...) rather than a setting, so the caller gives it, with the
 * connector it owns (built from `security`; a plain one when omitted).
 */
export function connectCluster(connection: ConnectionOptions, client: { clientId: string; connector?: UpstreamConnector; log: Logger }): UpstreamClusterClient {
  return new UpstreamClusterClient({
    bootstrap: connection.upstream,
    maxFrameBytes: connection.maxFrameBytes,
    requestTimeoutMs: connection.requestTimeoutMs,
    ...client,
  });
}
