/**
 * The bearer token of a listener that requires one (the admin listener, the table API's), from a
 * file (a mounted Kubernetes Secret), re-read when it changes like the TLS files: a rotated token
 * is in force within seconds, the old one refused. The CLI reads the same file to send it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { WatchedFiles } from '../common/watched-files.js';
import type { Logger } from '../common/log.js';

/** Shorter tokens are refused: anyone on the pod network may guess at a listener off loopback. */
export const MIN_TOKEN_LENGTH = 16;

/** RFC 6750's b64token: what an Authorization: Bearer header can carry unquoted. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** The token a file holds (trailing line breaks and spaces ignored); throws saying what is wrong, never quoting it. */
export function tokenOf(contents: Buffer): string {
  const token = contents.toString('utf8').replace(/\s+$/, '');
  if (token === '') throw new Error('the file is empty: write a token into it (for example `head -c 32 /dev/urandom | base64`)');
  if (!B64TOKEN.test(token)) throw new Error('the token may hold only letters, digits and - . _ ~ + / (then = padding), as a bearer token must');
  if (token.length < MIN_TOKEN_LENGTH)
    throw new Error(`the token has ${token.length} characters; use at least ${MIN_TOKEN_LENGTH} (for example \`head -c 32 /dev/urandom | base64\`)`);
  return token;
}

export type TokenVerdict = 'ok' | 'missing' | 'wrong';

/** Digests compare in constant time whatever the lengths, so a guess learns nothing from timing. */
const digest = (s: string) => createHash('sha256').update(s).digest();

export class BearerToken {
  private readonly file: WatchedFiles<Buffer<ArrayBuffer>>;

  /** Throws when the file cannot be read or holds no usable token; `what` names the file in logs. */
  constructor(path: string, log: Logger, what = 'admin token file') {
    this.file = new WatchedFiles([path], ([contents]) => digest(tokenOf(contents!)), { log, what });
  }

  /** Judges an Authorization header: `Bearer TOKEN`, the scheme in any case (RFC 7235). */
  check(authorization: string | undefined): TokenVerdict {
    const m = /^bearer +(\S+) *$/i.exec(authorization ?? '');
    if (!m) return 'missing';
    return timingSafeEqual(digest(m[1]!), this.file.value) ? 'ok' : 'wrong';
  }

  close(): void {
    this.file.close();
  }
}
