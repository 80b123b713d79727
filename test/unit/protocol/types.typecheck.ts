// Type-level checks of the typed decoders and encoders: tsc compiles this file with the rest
// of the tests, and each `@ts-expect-error` fails the build if the line below it compiles.
// Nothing here runs.
import {
  ApiKey,
  type ApiKeyOf,
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  type FetchRequest,
  type Struct,
} from '../../../src/protocol/messages.js';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}

export function typedDecoders(buf: Buffer, someKey: number): void {
  const fetch = decodeRequest(ApiKey.Fetch, 12, buf);
  assertType<Equal<typeof fetch, FetchRequest>>();
  const topics: { partitions: { partition: number; fetchOffset: bigint }[] }[] = fetch.topics;
  const maxWaitMs: number = fetch.maxWaitMs;
  // Only Fetch v12+ has it, so a decoder at another version leaves it out.
  const clusterId: string | null | undefined = fetch.clusterId;
  // @ts-expect-error an optional field is possibly undefined
  const rackId: string = fetch.rackId;
  // @ts-expect-error a made-up field
  void fetch.madeUp;
  // @ts-expect-error a field of the response, not of the request
  void fetch.responses;
  void [topics, maxWaitMs, clusterId, rackId];

  const response = decodeResponse(ApiKey.Fetch, 16, buf);
  const records: Buffer | null = response.responses[0]!.partitions[0]!.records;
  const highWatermark: bigint = response.responses[0]!.partitions[0]!.highWatermark;
  // @ts-expect-error int64 decodes as a bigint
  const asNumber: number = response.responses[0]!.partitions[0]!.highWatermark;
  void [records, highWatermark, asNumber];

  // A key that is not a literal gives a Struct; a caller cannot name a body type of its own.
  const _untyped = decodeResponse(someKey, 0, buf);
  assertType<Equal<typeof _untyped, Struct>>();
  // @ts-expect-error no hand-written body types
  decodeResponse<{ errorCode: number }>(ApiKey.Fetch, 16, buf);
  assertType<Equal<ApiKeyOf<'Fetch'>, 1>>();
}

export function typedEncoders(someKey: number): void {
  encodeRequest(ApiKey.Fetch, 12, { topics: [{ partitions: [{ fetchOffset: 5 }] }] });
  encodeRequest(ApiKey.Fetch, 12, { topics: [{ partitions: [{ fetchOffset: 5n }] }] });
  // @ts-expect-error a made-up field
  encodeRequest(ApiKey.Fetch, 12, { madeUp: 1 });
  // @ts-expect-error a string where an int32 belongs
  encodeResponse(ApiKey.Metadata, 12, { brokers: [{ port: '9092' }] });
  // A key that is not a literal takes any object.
  encodeResponse(someKey, 12, { madeUp: 1 });
}
