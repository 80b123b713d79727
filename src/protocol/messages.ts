import { ProtocolError } from './errors.js';
import { API_KEY, APIS, type ApiDef } from './generated/messages.js';
import type { ApiKeyNumber, RequestBodies, ResponseBodies } from './generated/types.js';
import { type RequestHeaderInit, responseHeaderVersion, writeRequestHeader, writeResponseHeader } from './headers.js';
import { Reader } from './wire/reader.js';
import { compileStruct, protocolError, type Struct, type StructCodec } from './wire/struct-codec.js';
import { Writer } from './wire/writer.js';
import type { ByteParts, OutgoingFrame } from './wire/byte-parts.js';

export type { Struct } from './wire/struct-codec.js';
export type { TaggedField } from './wire/tagged-field.js';
export type * from './generated/types.js';

/**
 * What an encoder takes for a body of type T: every field optional (a missing one is written
 * as its default), int64 as a bigint or a safe-integer number, bytes as any Uint8Array or in
 * pieces (ByteParts).
 */
export type BodyInit<T> = T extends bigint
  ? bigint | number
  : T extends Buffer
    ? Uint8Array | ByteParts
    : T extends readonly (infer E)[]
      ? readonly BodyInit<E>[]
      : T extends object
        ? { [K in keyof T]?: K extends '_unknownTags' ? T[K] : BodyInit<T[K]> }
        : T;

/** A number that is not a literal api key of a known API (then encoders check the body's type). */
type UntypedApiKey<K extends number> = number extends K ? K : K extends ApiKeyNumber ? never : K;

/** Api key by name, for every API in Kafka's definitions (Produce: 0, Fetch: 1, ...). */
export const ApiKey = API_KEY;
export type ApiKeyName = keyof typeof API_KEY;

export interface ApiSchema {
  apiKey: number;
  name: string;
  minVersion: number;
  maxVersion: number;
  /** The first flexible version, or null when no version is flexible. */
  flexibleMin: number | null;
}

function apiDef(apiKey: number): ApiDef | undefined {
  return Number.isInteger(apiKey) && apiKey >= 0 ? APIS[apiKey] : undefined;
}

/** The API's name ("Fetch"), also for APIs whose versions were all removed. */
export function apiName(apiKey: number): string | undefined {
  return apiDef(apiKey)?.name;
}

/** The versions this codec handles; undefined for unknown or removed APIs. */
export function apiSchema(apiKey: number): ApiSchema | undefined {
  const api = apiDef(apiKey);
  if (!api?.validVersions) return undefined;
  return {
    apiKey: api.apiKey,
    name: api.name,
    minVersion: api.validVersions[0],
    maxVersion: api.validVersions[1],
    flexibleMin: api.flexibleVersions?.[0] ?? null,
  };
}

type Direction = 'request' | 'response';

interface Compiled {
  codec: StructCodec;
  /** "Fetch v16 response", the prefix of every error about this message. */
  label: string;
}

const compiled = new Map<number, Compiled>();

function compiledFor(apiKey: number, version: number, direction: Direction): Compiled {
  const valid = Number.isInteger(apiKey) && apiKey >= 0 && apiKey < 0x8000 && Number.isInteger(version) && version >= 0 && version < 0x8000;
  const cacheKey = (apiKey * 0x8000 + version) * 2 + (direction === 'request' ? 0 : 1);
  const hit = valid ? compiled.get(cacheKey) : undefined;
  if (hit) return hit;
  const api = apiDef(apiKey);
  if (!api) throw new ProtocolError(`unknown api key ${apiKey}`);
  const versions = api.validVersions;
  if (!valid || !versions || version < versions[0] || version > versions[1]) {
    const supported = versions ? `${versions[0]}-${versions[1]}` : 'none';
    throw new ProtocolError(`${api.name} v${version} ${direction}: unsupported version (supported: ${supported})`);
  }
  const flexible = api.flexibleVersions !== null && version >= api.flexibleVersions[0] && version <= api.flexibleVersions[1];
  const entry = { codec: compileStruct(api[direction], version, flexible), label: `${api.name} v${version} ${direction}` };
  compiled.set(cacheKey, entry);
  return entry;
}

function decode(direction: Direction, apiKey: number, version: number, buf: Buffer, offset?: number, end?: number, exact = true): Struct {
  const { codec, label } = compiledFor(apiKey, version, direction);
  try {
    const r = new Reader(buf, offset, end);
    r.nullBytesAsEmpty = !exact;
    const body = codec.read(r);
    if (exact && r.remaining !== 0) throw new ProtocolError(`${r.remaining} bytes left after the body`);
    return body;
  } catch (e) {
    throw protocolError(label, e);
  }
}

function encode(direction: Direction, apiKey: number, version: number, body: object): Buffer {
  const { codec, label } = compiledFor(apiKey, version, direction);
  try {
    const w = new Writer();
    codec.write(w, body);
    return w.finish();
  } catch (e) {
    throw protocolError(label, e);
  }
}

/**
 * Decodes a request body (no header, no size prefix) from buf[offset, end), which it must
 * fill exactly. Bytes and records fields are views into buf, not copies. With a literal api
 * key (ApiKey.Fetch) the body is typed by the generated interface (FetchRequest); with any
 * other number it is a Struct.
 */
export function decodeRequest<K extends ApiKeyNumber>(apiKey: K, version: number, buf: Buffer, offset?: number, end?: number): RequestBodies[K];
export function decodeRequest(apiKey: number, version: number, buf: Buffer, offset?: number, end?: number): Struct;
export function decodeRequest(apiKey: number, version: number, buf: Buffer, offset?: number, end?: number): Struct {
  return decode('request', apiKey, version, buf, offset, end);
}

/** Decodes a response body; see decodeRequest. */
export function decodeResponse<K extends ApiKeyNumber>(apiKey: K, version: number, buf: Buffer, offset?: number, end?: number): ResponseBodies[K];
export function decodeResponse(apiKey: number, version: number, buf: Buffer, offset?: number, end?: number): Struct;
export function decodeResponse(apiKey: number, version: number, buf: Buffer, offset?: number, end?: number): Struct {
  return decode('response', apiKey, version, buf, offset, end);
}

/**
 * Decodes a response body as the clients of its upstream read one. Bytes after the body are
 * ignored, as Java's generated readers and librdkafka's handlers ignore them: librdkafka's mock
 * cluster ends most flexible bodies with a second empty tag section. A null in a bytes or records
 * field that allows none reads as empty, as franz-go's kmsg reads it: kfake writes ShareFetch's
 * records as null wherever a partition holds none (Java's readers would refuse that answer; the
 * proxy re-encodes it as empty records when a filter changes it, and passes it on otherwise).
 */
export function decodeResponseLeniently<K extends ApiKeyNumber>(apiKey: K, version: number, buf: Buffer, offset?: number): ResponseBodies[K];
export function decodeResponseLeniently(apiKey: number, version: number, buf: Buffer, offset?: number): Struct;
export function decodeResponseLeniently(apiKey: number, version: number, buf: Buffer, offset?: number): Struct {
  return decode('response', apiKey, version, buf, offset, undefined, false);
}

/**
 * Encodes a request body; missing fields take their defaults, fields absent in `version` are
 * ignored. With a literal api key the body must fit the generated interface (BodyInit).
 */
export function encodeRequest<K extends ApiKeyNumber>(apiKey: K, version: number, body: BodyInit<RequestBodies[K]>): Buffer;
export function encodeRequest<K extends number>(apiKey: UntypedApiKey<K>, version: number, body: object): Buffer;
export function encodeRequest(apiKey: number, version: number, body: object): Buffer {
  return encode('request', apiKey, version, body);
}

/** Encodes a response body; see encodeRequest. */
export function encodeResponse<K extends ApiKeyNumber>(apiKey: K, version: number, body: BodyInit<ResponseBodies[K]>): Buffer;
export function encodeResponse<K extends number>(apiKey: UntypedApiKey<K>, version: number, body: object): Buffer;
export function encodeResponse(apiKey: number, version: number, body: object): Buffer {
  return encode('response', apiKey, version, body);
}

function sealFrame(w: Writer): Buffer {
  const frame = w.finish();
  frame.writeInt32BE(frame.length - 4, 0);
  return frame;
}

/** A complete request frame: size prefix, request header (v1 or v2 as the version needs), body. */
export function encodeRequestFrame(header: RequestHeaderInit, body: object): Buffer {
  const { codec, label } = compiledFor(header.apiKey, header.apiVersion, 'request');
  try {
    const w = new Writer(512);
    w.int32(0);
    writeRequestHeader(w, header);
    codec.write(w, body);
    return sealFrame(w);
  } catch (e) {
    throw protocolError(label, e);
  }
}

/** A complete response frame: size prefix, response header (v0 or v1 as the version needs), body. */
export function encodeResponseFrame(apiKey: number, version: number, correlationId: number, body: object): Buffer {
  return sealFrame(responseWriter(apiKey, version, correlationId, body));
}

/** Frames at least this large go out in parts rather than joined (byte-parts.ts). */
const PARTS_FROM_BYTES = 64 * 1024;

/** A response frame for a socket: in parts when large (its byte fields by reference), else one buffer. */
export function encodeOutgoingResponse(apiKey: number, version: number, correlationId: number, body: object): OutgoingFrame {
  const w = responseWriter(apiKey, version, correlationId, body);
  if (w.length < PARTS_FROM_BYTES) return sealFrame(w);
  const frame = w.finishParts();
  // The first part begins with the size prefix: the writer's first four bytes, never a byte field.
  frame.parts[0]!.writeInt32BE(frame.length - 4, 0);
  return frame.parts.length === 1 ? frame.parts[0]! : frame;
}

function responseWriter(apiKey: number, version: number, correlationId: number, body: object): Writer {
  const { codec, label } = compiledFor(apiKey, version, 'response');
  try {
    const w = new Writer(512);
    w.int32(0);
    writeResponseHeader(w, correlationId, responseHeaderVersion(apiKey, version)!);
    codec.write(w, body);
    return w;
  } catch (e) {
    throw protocolError(label, e);
  }
}
