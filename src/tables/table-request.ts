/**
 * A table API request as the routes take it (docs/tables.md): the method and path matched to a
 * route, the key decoded, the query and the condition headers checked. Anything malformed is an
 * ApiError saying which part and what is allowed, before anything is read or written.
 */
import type { TableKey, WrittenRecord } from '../engine/api/table-reads.js';
import type { TableRouteName } from '../ops/metrics/table-metrics.js';
import { ApiError } from './api-error.js';
import { decodeBase64, type Encoding } from './record-json.js';
import { parseCursor, type Cursor } from './change-framing.js';

/** How long a read waits for the index to reach `min_offset`, and a write for its verdict, unless told. */
export const DEFAULT_TIMEOUT_MS = 5_000;
export const MAX_TIMEOUT_MS = 60_000;

/** A write's condition (docs/tables.md, "Compare-and-set"). */
export type Condition = WrittenRecord['condition'] | null;

interface Common {
  topic: string;
  encoding: Encoding;
}

export interface GetKey extends Common {
  route: 'get_key';
  key: TableKey;
  partition: number | undefined;
  /** The offset a write returned: the read waits until the index has read it. */
  minOffset: number | undefined;
  timeoutMs: number;
}

export interface WriteKey extends Common {
  route: 'put_key' | 'delete_key';
  key: Buffer;
  partition: number | undefined;
  condition: Condition;
  timeoutMs: number;
}

export type ChangeFilter = { key: TableKey } | { prefix: Buffer } | null;

export interface Changes extends Common {
  route: 'changes';
  partition: number | undefined;
  from: number | 'now';
  filter: ChangeFilter;
  format: 'sse' | 'ndjson';
  /** Where a stream left off (Last-Event-ID): each partition's last offset sent. */
  resume: Cursor | undefined;
}

export interface TopicInfo {
  route: 'topic';
  topic: string;
}

export type TableRequest = GetKey | WriteKey | Changes | TopicInfo;

/** Every method and path the API serves (docs/tables.openapi.yaml describes each; a test holds them together). */
export const SERVED_ROUTES = [
  { method: 'GET', path: '/v1/topics/{topic}', route: 'topic' },
  { method: 'GET', path: '/v1/topics/{topic}/keys/{key}', route: 'get_key' },
  { method: 'PUT', path: '/v1/topics/{topic}/keys/{key}', route: 'put_key' },
  { method: 'DELETE', path: '/v1/topics/{topic}/keys/{key}', route: 'delete_key' },
  { method: 'GET', path: '/v1/topics/{topic}/changes', route: 'changes' },
] as const;

/** The query parameters each route takes; any other is refused. */
export const QUERY_PARAMETERS: Readonly<Record<TableRequest['route'], readonly string[]>> = {
  topic: [],
  get_key: ['encoding', 'partition', 'min_offset', 'timeout_ms', 'key_format'],
  put_key: ['encoding', 'partition', 'timeout_ms'],
  delete_key: ['encoding', 'partition', 'timeout_ms'],
  changes: ['from', 'partition', 'key', 'prefix', 'format', 'encoding', 'key_format'],
};

/** Header fields by lowercased name, repeated ones joined with ", " (node:http's and common/http1's alike). */
export type RequestHeaders = Readonly<Record<string, string | undefined>>;

const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;
const DIGITS = /^\d+$/;

const badRequest = (message: string, fix: string) => new ApiError(400, message, fix);

/** The route a method and path name, for the metrics, whether or not the request is well formed. */
export function routeOf(method: string | undefined, rawUrl: string): TableRouteName {
  const segments = pathOf(rawUrl).split('/');
  if (segments[1] !== 'v1' || segments[2] !== 'topics' || segments.length < 4) return 'unmatched';
  if (segments.length === 4) return 'topic';
  if (segments.length === 5 && segments[4] === 'changes') return 'changes';
  if (segments.length === 6 && segments[4] === 'keys') return method === 'PUT' ? 'put_key' : method === 'DELETE' ? 'delete_key' : 'get_key';
  return 'unmatched';
}

/**
 * The raw path: URL parsing would resolve `.` and `..` segments, which are keys like any other
 * here, and would turn a key's `%2F` into a separator.
 */
function pathOf(rawUrl: string): string {
  const q = rawUrl.indexOf('?');
  return q < 0 ? rawUrl : rawUrl.slice(0, q);
}

function decodeSegment(segment: string, what: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(
      `the ${what} in the path is not percent-encoded UTF-8`,
      `percent-encode the ${what} as UTF-8 (encodeURIComponent); for a key that is not UTF-8 text, send it in base64 with ?encoding=base64`,
    );
  }
}

function topicOf(segment: string): string {
  const topic = decodeSegment(segment, 'topic');
  if (!TOPIC_NAME.test(topic)) {
    throw badRequest(`${JSON.stringify(topic)} is not a Kafka topic name`, 'a topic name has 1 to 249 characters of A-Z a-z 0-9 . _ -');
  }
  return topic;
}

/** The query's parameters, refusing any the route does not take (a misspelt one would be ignored silently). */
function queryOf(rawUrl: string, allowed: readonly string[]): URLSearchParams {
  const q = rawUrl.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : rawUrl.slice(q + 1));
  for (const name of new Set(params.keys())) {
    if (!allowed.includes(name)) {
      throw badRequest(
        `unknown query parameter ${JSON.stringify(name)}`,
        `this route takes ${allowed.length > 0 ? allowed.join(', ') : 'no query parameters'}`,
      );
    }
    if (params.getAll(name).length > 1) throw badRequest(`query parameter ${name} is given more than once`, 'give it once');
  }
  return params;
}

function integerParam(params: URLSearchParams, name: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = params.get(name);
  if (raw === null) return undefined;
  const n = DIGITS.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n > max) throw badRequest(`${name}=${raw} is not an integer from 0 to ${max}`, `give ${name} as decimal digits`);
  return n;
}

function encodingOf(params: URLSearchParams): Encoding {
  const raw = params.get('encoding') ?? 'utf8';
  if (raw !== 'utf8' && raw !== 'base64') throw badRequest(`encoding=${raw} is not known`, 'use encoding=utf8 (the default) or encoding=base64');
  return raw;
}

function timeoutOf(params: URLSearchParams): number {
  return integerParam(params, 'timeout_ms', MAX_TIMEOUT_MS) ?? DEFAULT_TIMEOUT_MS;
}

function keyBytes(text: string, encoding: Encoding, what: string): Buffer {
  return encoding === 'utf8' ? Buffer.from(text, 'utf8') : decodeBase64(text, what);
}

/** The key of a read or a filter: bytes, or the JSON a schema-registry topic's keys are compared by. */
function tableKey(text: string, encoding: Encoding, params: URLSearchParams): TableKey {
  const format = params.get('key_format') ?? 'bytes';
  if (format === 'bytes') return { bytes: keyBytes(text, encoding, 'key') };
  if (format !== 'json') throw badRequest(`key_format=${format} is not known`, 'use key_format=bytes (the default) or key_format=json');
  try {
    return { json: JSON.parse(keyBytes(text, encoding, 'key').toString('utf8')) as unknown };
  } catch {
    throw badRequest('with key_format=json the key must be JSON text', 'send the key as JSON, percent-encoded in the path: "order-1" or {"id":1}');
  }
}

/** HTTP's entity tag as kcompact gives it (ETag: "offset"), or the bare offset. */
function ifMatchOffset(raw: string): number {
  const value = raw.trim();
  const fix = 'send If-Match: <offset>, the offset a read or write of the key returned (or its ETag, "<offset>")';
  if (value === '*') throw badRequest('If-Match: * is not supported', `${fix}; to write only a key that has no value, send If-None-Match: *`);
  if (value.startsWith('W/')) throw badRequest('If-Match takes no weak entity tag', fix);
  const unquoted = /^"(.*)"$/.exec(value)?.[1] ?? value;
  const n = DIGITS.test(unquoted) ? Number(unquoted) : NaN;
  if (!Number.isSafeInteger(n)) throw badRequest(`If-Match: ${value} is not one offset`, fix);
  return n;
}

function conditionOf(route: WriteKey['route'], headers: RequestHeaders): Condition {
  const ifMatch = headers['if-match'];
  const ifNoneMatch = headers['if-none-match'];
  if (ifMatch !== undefined && ifNoneMatch !== undefined) {
    throw badRequest('If-Match and If-None-Match are both set', 'send one condition: If-Match: <offset> or If-None-Match: *');
  }
  if (ifMatch !== undefined) return { ifMatch: ifMatchOffset(ifMatch) };
  if (ifNoneMatch === undefined) return null;
  if (ifNoneMatch.trim() !== '*')
    throw badRequest(`If-None-Match: ${ifNoneMatch} is not supported`, 'send If-None-Match: * to write only a key that has no value');
  if (route === 'delete_key')
    throw badRequest('a delete with If-None-Match: * would delete a key that has no value', 'delete with If-Match: <offset>, or without a condition');
  return { ifNoneMatch: true };
}

function partitionOf(params: URLSearchParams): number | undefined {
  return integerParam(params, 'partition', 2 ** 31 - 1);
}

function keyRoute(method: string | undefined, topic: string, segment: string, rawUrl: string, headers: RequestHeaders): TableRequest {
  if (method === 'GET') {
    const params = queryOf(rawUrl, QUERY_PARAMETERS.get_key);
    const encoding = encodingOf(params);
    return {
      route: 'get_key',
      topic,
      encoding,
      key: tableKey(decodeSegment(segment, 'key'), encoding, params),
      partition: partitionOf(params),
      minOffset: integerParam(params, 'min_offset'),
      timeoutMs: timeoutOf(params),
    };
  }
  if (method !== 'PUT' && method !== 'DELETE') throw notAllowed(method, 'GET, PUT, DELETE');
  const route = method === 'PUT' ? 'put_key' : 'delete_key';
  const params = queryOf(rawUrl, QUERY_PARAMETERS[route]);
  const encoding = encodingOf(params);
  return {
    route,
    topic,
    encoding,
    key: keyBytes(decodeSegment(segment, 'key'), encoding, 'key'),
    partition: partitionOf(params),
    condition: conditionOf(route, headers),
    timeoutMs: timeoutOf(params),
  };
}

function changesRoute(topic: string, rawUrl: string, headers: RequestHeaders): Changes {
  const params = queryOf(rawUrl, QUERY_PARAMETERS.changes);
  const encoding = encodingOf(params);
  const fromRaw = params.get('from') ?? 'now';
  const from = fromRaw === 'now' ? 'now' : integerParam(params, 'from');
  const key = params.get('key');
  const prefix = params.get('prefix');
  if (key !== null && prefix !== null) throw badRequest('key and prefix are both set', 'filter by one key (key=) or by a key prefix (prefix=), not both');
  if (prefix !== null && params.has('key_format')) {
    throw badRequest(
      'a prefix is matched on key bytes: key_format does not apply to it',
      'drop key_format, or filter by one key with key= and key_format=json',
    );
  }
  const filter: ChangeFilter =
    key !== null ? { key: tableKey(key, encoding, params) } : prefix !== null ? { prefix: keyBytes(prefix, encoding, 'prefix') } : null;
  const format = params.get('format') ?? (/\btext\/event-stream\b/.test(headers.accept ?? '') ? 'sse' : 'ndjson');
  if (format !== 'sse' && format !== 'ndjson') throw badRequest(`format=${format} is not known`, 'use format=sse (Server-Sent Events) or format=ndjson');
  const lastEventId = headers['last-event-id'];
  return {
    route: 'changes',
    topic,
    encoding,
    partition: partitionOf(params),
    from: from!,
    filter,
    format,
    resume: lastEventId === undefined || lastEventId.trim() === '' ? undefined : parseCursor(lastEventId),
  };
}

function notAllowed(method: string | undefined, allow: string): ApiError {
  return new ApiError(405, `method ${method ?? '(none)'} is not allowed here`, `this path takes ${allow}`, {}, { allow });
}

/** The request as its route takes it; an ApiError (400, 404, 405) when it is not one the API serves. */
export function parseTableRequest(
  method: string | undefined,
  rawUrl: string,
  headers: RequestHeaders,
  route: TableRouteName = routeOf(method, rawUrl),
): TableRequest {
  const segments = pathOf(rawUrl).split('/');
  if (route === 'unmatched') {
    throw new ApiError(
      404,
      `no route ${pathOf(rawUrl)}`,
      'the table API serves /v1/topics/{topic}, /v1/topics/{topic}/keys/{key} and /v1/topics/{topic}/changes (docs/tables.md)',
    );
  }
  const topic = topicOf(segments[3]!);
  if (route === 'topic' || route === 'changes') {
    if (method !== 'GET') throw notAllowed(method, 'GET');
    if (route === 'topic') {
      queryOf(rawUrl, QUERY_PARAMETERS.topic);
      return { route, topic };
    }
    return changesRoute(topic, rawUrl, headers);
  }
  return keyRoute(method, topic, segments[5]!, rawUrl, headers);
}
