/**
 * The client side of SASL for the proxy's own upstream connections: a SaslHandshake naming the
 * mechanism, then SaslAuthenticate rounds carrying PLAIN (RFC 4616) or SCRAM-SHA-256/512
 * (RFC 5802, RFC 7677) messages. Clients of the proxy never come here: their own SaslHandshake and
 * SaslAuthenticate pass through to the upstream on their own connections.
 */
import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { ErrorCode } from '../protocol/errors.js';
import { ApiKey, type ApiKeyNumber, type BodyInit, type RequestBodies, type ResponseBodies, type SaslAuthenticateResponse } from '../protocol/messages.js';
import type { HostPort } from '../common/host-port.js';

export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

export interface SaslCredentials {
  mechanism: SaslMechanism;
  username: string;
  password: string;
}

/** The upstream refused to authenticate the proxy, or the exchange went wrong; never holds the password. */
export class SaslAuthenticationError extends Error {
  override readonly name = 'SaslAuthenticationError';
}

/** RFC 4616: authorization identity (empty: the same as the user), user, password, NUL-separated. */
export function plainMessage(username: string, password: string): Buffer {
  return Buffer.from(`\0${username}\0${password}`, 'utf8');
}

export type ScramHash = 'sha1' | 'sha256' | 'sha512';

const DIGEST_BYTES: Record<ScramHash, number> = { sha1: 20, sha256: 32, sha512: 64 };
/** Kafka's own client refuses fewer: a server asking for less would make a stolen exchange cheap to crack. */
const MIN_ITERATIONS = 4096;
const GS2_HEADER = 'n,,';
const pbkdf2Async = promisify(pbkdf2);

/** RFC 5802 saslname: ',' and '=' are escaped. */
function saslName(username: string): string {
  return username.replace(/=/g, '=3D').replace(/,/g, '=2C');
}

function attributes(message: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const part of message.split(',')) {
    const eq = part.indexOf('=');
    if (eq !== 1) throw new SaslAuthenticationError(`malformed SCRAM server message: attribute "${part.slice(0, 16)}" is not of the form x=value`);
    found.set(part[0]!, part.slice(2));
  }
  return found;
}

/** One SCRAM exchange (RFC 5802): client-first, client-final from the server-first, then the server's signature checked. */
export class ScramClient {
  private readonly clientFirstBare: string;
  private serverSignature: Buffer | null = null;

  constructor(
    private readonly hash: ScramHash,
    username: string,
    private readonly password: string,
    private readonly clientNonce: string = randomBytes(24).toString('base64'),
  ) {
    this.clientFirstBare = `n=${saslName(username)},r=${clientNonce}`;
  }

  firstMessage(): Buffer {
    return Buffer.from(GS2_HEADER + this.clientFirstBare, 'utf8');
  }

  async finalMessage(serverFirst: Buffer): Promise<Buffer> {
    const serverFirstText = serverFirst.toString('utf8');
    const attrs = attributes(serverFirstText);
    if (attrs.has('e')) throw new SaslAuthenticationError(`SCRAM server error: ${attrs.get('e')}`);
    if (attrs.has('m')) throw new SaslAuthenticationError('SCRAM server requires an extension kcompact does not know');
    const nonce = attrs.get('r');
    const salt = attrs.get('s');
    const iterations = Number(attrs.get('i'));
    if (!nonce || !nonce.startsWith(this.clientNonce) || nonce.length === this.clientNonce.length) {
      throw new SaslAuthenticationError('SCRAM server nonce does not extend the client nonce');
    }
    if (!salt) throw new SaslAuthenticationError('SCRAM server sent no salt');
    if (!Number.isInteger(iterations) || iterations < MIN_ITERATIONS) {
      throw new SaslAuthenticationError(`SCRAM server asked for ${attrs.get('i')} iterations; at least ${MIN_ITERATIONS} are required`);
    }
    const salted = await pbkdf2Async(Buffer.from(this.password, 'utf8'), Buffer.from(salt, 'base64'), iterations, DIGEST_BYTES[this.hash], this.hash);
    const clientKey = this.hmac(salted, 'Client Key');
    const storedKey = createHash(this.hash).update(clientKey).digest();
    const withoutProof = `c=${Buffer.from(GS2_HEADER).toString('base64')},r=${nonce}`;
    const authMessage = `${this.clientFirstBare},${serverFirstText},${withoutProof}`;
    const signature = this.hmac(storedKey, authMessage);
    const proof = Buffer.alloc(clientKey.length);
    for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i]! ^ signature[i]!;
    this.serverSignature = this.hmac(this.hmac(salted, 'Server Key'), authMessage);
    return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`, 'utf8');
  }

  /** Proves the server knew the password too (a server that did not could be anyone). */
  verifyServerFinal(serverFinal: Buffer): void {
    if (!this.serverSignature) throw new SaslAuthenticationError('SCRAM server-final arrived before the client-final was made');
    const attrs = attributes(serverFinal.toString('utf8'));
    if (attrs.has('e')) throw new SaslAuthenticationError(`SCRAM server error: ${attrs.get('e')}`);
    const given = Buffer.from(attrs.get('v') ?? '', 'base64');
    if (given.length !== this.serverSignature.length || !timingSafeEqual(given, this.serverSignature)) {
      throw new SaslAuthenticationError("SCRAM server signature does not match: the server does not hold this user's credentials (or is not the upstream)");
    }
  }

  private hmac(key: Buffer, text: string): Buffer {
    return createHmac(this.hash, key).update(text, 'utf8').digest();
  }
}

/** What the exchange needs of a connection that has negotiated versions (UpstreamClient). */
export interface SaslConnection {
  readonly address: HostPort;
  version(apiKey: number): number;
  request<K extends ApiKeyNumber>(apiKey: K, version: number, body: BodyInit<RequestBodies[K]>): Promise<ResponseBodies[K]>;
}

const FIX = 'check upstreamSaslMechanism, upstreamSaslUsername and the password (upstreamSaslPassword or upstreamSaslPasswordFile)';

/**
 * Authenticates the connection. Resolves with the session lifetime the upstream granted (0: no
 * limit); past it the upstream closes the connection (KIP-368), so the caller retires it before.
 */
export async function saslAuthenticate(conn: SaslConnection, credentials: SaslCredentials): Promise<number> {
  const where = `upstream ${conn.address.host}:${conn.address.port}`;
  const { mechanism, username } = credentials;
  const handshakeVersion = conn.version(ApiKey.SaslHandshake);
  if (handshakeVersion < 1) {
    throw new SaslAuthenticationError(
      `${where} offers only SaslHandshake v0 (SASL tokens outside Kafka frames), which kcompact does not speak; it needs a broker of Kafka 1.0 or later`,
    );
  }
  const handshake = await conn.request(ApiKey.SaslHandshake, handshakeVersion, { mechanism });
  if (handshake.errorCode === ErrorCode.UNSUPPORTED_SASL_MECHANISM) {
    throw new SaslAuthenticationError(
      `${where} does not enable SASL mechanism ${mechanism} (it offers ${handshake.mechanisms.join(', ') || 'none'}); set upstreamSaslMechanism to one of them`,
    );
  }
  if (handshake.errorCode !== ErrorCode.NONE) {
    const hint = handshake.errorCode === ErrorCode.ILLEGAL_SASL_STATE ? ' (ILLEGAL_SASL_STATE: is this a SASL listener of the upstream?)' : '';
    throw new SaslAuthenticationError(`${where} refused SaslHandshake for ${mechanism} with error ${handshake.errorCode}${hint}`);
  }
  const version = conn.version(ApiKey.SaslAuthenticate);
  const round = async (authBytes: Buffer): Promise<SaslAuthenticateResponse> => {
    const answer = await conn.request(ApiKey.SaslAuthenticate, version, { authBytes });
    if (answer.errorCode !== ErrorCode.NONE) {
      throw new SaslAuthenticationError(
        `${where} refused SASL authentication of user "${username}" with ${mechanism}: ${answer.errorMessage ?? `error ${answer.errorCode}`}; ${FIX}`,
      );
    }
    return answer;
  };
  let last: SaslAuthenticateResponse;
  if (mechanism === 'PLAIN') {
    last = await round(plainMessage(username, credentials.password));
  } else {
    const scram = new ScramClient(mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512', username, credentials.password);
    // The SCRAM steps' own errors do not know the connection: name it.
    const step = async <T>(run: () => Promise<T> | T): Promise<T> => {
      try {
        return await run();
      } catch (err) {
        throw new SaslAuthenticationError(`${where}, user "${username}" with ${mechanism}: ${(err as Error).message}`);
      }
    };
    const serverFirst = await round(scram.firstMessage());
    const final = await round(await step(() => scram.finalMessage(serverFirst.authBytes)));
    await step(() => scram.verifyServerFinal(final.authBytes));
    last = final;
  }
  return Number(last.sessionLifetimeMs ?? 0n);
}
