/**
 * Fetch sessions (KIP-227) against a filtered view: an incremental fetch names only the
 * partitions that changed, and the upstream answers only partitions with new data, so a session
 * the proxy did not see from its start could carry a compacted partition unfiltered. Once any
 * topic is compacted the proxy therefore keeps the upstream from creating sessions at all: every
 * full request goes upstream as a sessionless one (session id 0, epoch -1), the upstream answers
 * session id 0, and clients (Java, librdkafka, franz-go, kafkajs) keep sending full requests.
 * A client still holding a session from earlier is told it is gone, and starts over with a full
 * request.
 */
import type { ApiKeyOf, FetchRequest, FetchResponse } from '../../protocol/messages.js';
import type { FilterRequest } from '../../proxy/filter/filter.js';
import { ErrorCode } from '../../protocol/errors.js';

/** The epoch of a sessionless full fetch (FetchMetadata.FINAL_EPOCH). */
export const SESSIONLESS_EPOCH = -1;

const FIRST_SESSION_VERSION = 7;
/** From v15 the replica id moved into a tagged field, so the session fields come 4 bytes earlier. */
const FIRST_VERSION_WITHOUT_REPLICA_ID = 15;

/** What the session fields are read from: the request's frame, as it came. */
export type FetchFrame = Pick<FilterRequest<ApiKeyOf<'Fetch'>>, 'apiVersion' | 'header' | 'frame'>;

export type SessionFields = Required<Pick<FetchRequest, 'sessionId' | 'sessionEpoch'>>;

/** Where sessionId sits in the frame: after replicaId (to v14), maxWaitMs, minBytes, maxBytes, isolationLevel. */
function sessionIdPosition(req: FetchFrame): number {
  const fixed = 4 + 4 + 4 + 1;
  return 4 + req.header.bodyOffset! + (req.apiVersion < FIRST_VERSION_WITHOUT_REPLICA_ID ? 4 : 0) + fixed;
}

/**
 * The request's session fields, or null before v7 (no sessions). Read from the frame: a request
 * that is answered FETCH_SESSION_ID_NOT_FOUND, or passes untouched, need not be decoded.
 */
export function sessionFields(req: FetchFrame): SessionFields | null {
  if (req.apiVersion < FIRST_SESSION_VERSION) return null;
  const at = sessionIdPosition(req);
  return { sessionId: req.frame.readInt32BE(at), sessionEpoch: req.frame.readInt32BE(at + 4) };
}

/** An incremental request (or a bad epoch) of a session the upstream must never have created. */
export function isIncremental(session: SessionFields | null): boolean {
  return session !== null && session.sessionId !== 0 && session.sessionEpoch !== SESSIONLESS_EPOCH;
}

export function isSessionless(session: SessionFields | null): boolean {
  return session === null || (session.sessionId === 0 && session.sessionEpoch === SESSIONLESS_EPOCH);
}

/**
 * A copy of the request frame that asks for a sessionless fetch; everything else byte for byte.
 * Patching eight bytes of a copy costs no more than the copy, where forwarding the changed body
 * would encode every topic and partition of the request again.
 */
export function sessionlessFrame(req: FetchFrame): Buffer {
  const frame = Buffer.from(req.frame);
  const at = sessionIdPosition(req);
  frame.writeInt32BE(0, at);
  frame.writeInt32BE(SESSIONLESS_EPOCH, at + 4);
  return frame;
}

/** The answer that makes a client drop its session and send a full request. */
export function sessionNotFound(): FetchResponse {
  return { throttleTimeMs: 0, errorCode: ErrorCode.FETCH_SESSION_ID_NOT_FOUND, sessionId: 0, responses: [] };
}
