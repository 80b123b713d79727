import { ProtocolError } from './errors.js';
import { APIS } from './generated/messages.js';
import { Reader } from './wire/reader.js';
import { protocolError } from './wire/struct-codec.js';
import type { TaggedField } from './wire/tagged-field.js';
import { Writer } from './wire/writer.js';

const API_VERSIONS_KEY = 18;

/** Whether a known (api key, version) uses flexible encoding; undefined when unknown. */
function flexibility(apiKey: number, apiVersion: number): boolean | undefined {
  const api = Number.isInteger(apiKey) ? APIS[apiKey] : undefined;
  const valid = api?.validVersions;
  if (!api || !valid || !(apiVersion >= valid[0] && apiVersion <= valid[1])) return undefined;
  const flexible = api.flexibleVersions;
  return flexible !== null && apiVersion >= flexible[0] && apiVersion <= flexible[1];
}

function unknownVersion(apiKey: number, apiVersion: number): ProtocolError {
  const api = Number.isInteger(apiKey) ? APIS[apiKey] : undefined;
  return new ProtocolError(`${api ? api.name : `unknown api key ${apiKey}`} v${apiVersion}: header version unknown`);
}

/** 2 for flexible versions, else 1. Throws a ProtocolError for an api key/version not in the schemas. */
export function requestHeaderVersion(apiKey: number, apiVersion: number): 1 | 2 {
  const flexible = flexibility(apiKey, apiVersion);
  if (flexible === undefined) throw unknownVersion(apiKey, apiVersion);
  return flexible ? 2 : 1;
}

/**
 * 1 for flexible versions, else 0; throws a ProtocolError when unknown. ApiVersions responses
 * always use header v0, whatever the version, so a client can read the answer to a version
 * the broker does not know.
 */
export function responseHeaderVersion(apiKey: number, apiVersion: number): 0 | 1 {
  if (apiKey === API_VERSIONS_KEY) return 0;
  const flexible = flexibility(apiKey, apiVersion);
  if (flexible === undefined) throw unknownVersion(apiKey, apiVersion);
  return flexible ? 1 : 0;
}

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  /** null when the api key/version is not in the schemas: the rest of the header is unknown. */
  headerVersion: 1 | 2 | null;
  clientId: string | null;
  unknownTags: TaggedField[];
  /** Where the body starts in the frame; null when the header version is unknown. */
  bodyOffset: number | null;
}

export interface RequestHeaderInit {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId?: string | null;
  unknownTags?: readonly TaggedField[];
}

export interface ResponseHeader {
  correlationId: number;
  unknownTags: TaggedField[];
  bodyOffset: number;
}

/** Decodes the header of one request frame given without its 4-byte size prefix. */
export function decodeRequestHeader(frame: Buffer): RequestHeader {
  if (!Buffer.isBuffer(frame) || frame.length < 8) {
    throw new ProtocolError(`request header: frame of ${frame?.length ?? 0} bytes is shorter than 8`);
  }
  const apiKey = frame.readInt16BE(0);
  const apiVersion = frame.readInt16BE(2);
  const correlationId = frame.readInt32BE(4);
  const flexible = flexibility(apiKey, apiVersion);
  if (flexible === undefined) {
    return { apiKey, apiVersion, correlationId, headerVersion: null, clientId: null, unknownTags: [], bodyOffset: null };
  }
  const headerVersion = flexible ? 2 : 1;
  const r = new Reader(frame, 8);
  let part = 'clientId';
  try {
    // The client id keeps its int16 length even in header v2, so that any broker can read
    // the header of an ApiVersions request of any version.
    const clientId = r.nullableString();
    part = 'tagged fields';
    const unknownTags = headerVersion === 2 ? r.taggedFields() : [];
    return { apiKey, apiVersion, correlationId, headerVersion, clientId, unknownTags, bodyOffset: r.pos };
  } catch (e) {
    throw protocolError(`${APIS[apiKey]!.name} v${apiVersion} request header: ${part}`, e);
  }
}

/** Appends a request header; the header version follows from the api key and version. */
export function writeRequestHeader(w: Writer, h: RequestHeaderInit): void {
  const headerVersion = requestHeaderVersion(h.apiKey, h.apiVersion);
  w.int16(h.apiKey);
  w.int16(h.apiVersion);
  w.int32(h.correlationId);
  w.nullableString(h.clientId ?? null);
  if (headerVersion === 2) w.taggedFields(h.unknownTags ?? []);
  else if (h.unknownTags?.length) throw new ProtocolError('request header v1 cannot carry tagged fields');
}

export function encodeRequestHeader(h: RequestHeaderInit): Buffer {
  try {
    const w = new Writer(64);
    writeRequestHeader(w, h);
    return w.finish();
  } catch (e) {
    throw protocolError('request header', e);
  }
}

/** Decodes a response header (version 0 or 1) from a frame given without its size prefix. */
export function decodeResponseHeader(frame: Buffer, headerVersion: number): ResponseHeader {
  try {
    if (headerVersion !== 0 && headerVersion !== 1) throw new ProtocolError(`unknown header version ${headerVersion}`);
    const r = new Reader(frame);
    const correlationId = r.int32();
    const unknownTags = headerVersion === 1 ? r.taggedFields() : [];
    return { correlationId, unknownTags, bodyOffset: r.pos };
  } catch (e) {
    throw protocolError('response header', e);
  }
}

export function writeResponseHeader(w: Writer, correlationId: number, headerVersion: number, unknownTags: readonly TaggedField[] = []): void {
  if (headerVersion !== 0 && headerVersion !== 1) throw new ProtocolError(`unknown header version ${headerVersion}`);
  w.int32(correlationId);
  if (headerVersion === 1) w.taggedFields(unknownTags);
  else if (unknownTags.length > 0) throw new ProtocolError('response header v0 cannot carry tagged fields');
}

export function encodeResponseHeader(correlationId: number, headerVersion: number, unknownTags: readonly TaggedField[] = []): Buffer {
  try {
    const w = new Writer(16);
    writeResponseHeader(w, correlationId, headerVersion, unknownTags);
    return w.finish();
  } catch (e) {
    throw protocolError('response header', e);
  }
}
