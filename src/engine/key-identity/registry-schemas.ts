/**
 * The writer schemas of framed keys, fetched by id from the schema registry
 * (@kafkajs/confluent-schema-registry does the HTTP and keeps each schema once fetched) and
 * turned into decoders. Fetching is asynchronous and happens before a fetched answer's rows are
 * written (see key-digesters.ts), so decoding each record stays synchronous.
 *
 * A schema the registry cannot give (unreachable, an error status, an id it does not know) is
 * not guessed at: resolve() throws SchemaUnavailableError and the partition waits. A schema it
 * gives but that cannot be used (a type the library does not know, a schema it cannot parse)
 * has no decoder, so its keys keep their exact bytes as identity.
 */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { Logger } from '../../common/log.js';
import type { KeyDecoder, SchemaDecoders } from './key-digesters.js';
import { registryEndpoint } from '../api/registry-url.js';
import { SchemaUnavailableError } from './schema-unavailable.js';

type ClientArgs = ConstructorParameters<typeof SchemaRegistry>[0];
type Middleware = NonNullable<ClientArgs['middlewares']>[number];

/** The library sets no timeout: a registry that accepts and never answers would stall indexing. */
function requestTimeout(ms: number): Middleware {
  return () => ({ prepareRequest: (next) => next().then((request) => request.enhance({ timeout: ms })) });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function rejectRoundedIntegers(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
    throw new Error(`the integer ${value} is beyond 2^53 and may have been rounded`);
  }
  return value;
}

/**
 * JSON Schema keys are JSON text: the schema validates but does not change what it decodes to.
 * Invalid UTF-8 and integers that JSON.parse would round would merge keys that differ, so they
 * fail instead.
 */
function jsonDecoder(payload: Buffer): unknown {
  return JSON.parse(utf8.decode(payload), rejectRoundedIntegers) as unknown;
}

/**
 * The library reads the first message type of a Protobuf schema only. Confluent's serializers
 * put a message-index list before the message: [0] (the first type) is the single byte 0; the
 * library itself writes none, and a message starts with a tag of at least 8 (field 1 or above).
 * A first byte from 1 to 7 is a list naming another message type: that key fails rather than be
 * read as the wrong type.
 */
function protobufDecoder(schema: { fromBuffer(b: Buffer): unknown }): KeyDecoder {
  return (payload) => {
    const first = payload[0] ?? 0;
    if (first > 0 && first < 8) throw new Error('the key is not of the first message type of its Protobuf schema, the only one the decoder reads');
    return schema.fromBuffer(payload);
  };
}

/**
 * Avro binary has one encoding per value, so a value that does not encode back to the same
 * bytes was read lossily (invalid UTF-8 in a string, say) and could equal another key's.
 */
function avroDecoder(schema: { fromBuffer(b: Buffer): unknown; toBuffer(v: unknown): Buffer }): KeyDecoder {
  return (payload) => {
    const value = schema.fromBuffer(payload);
    if (!schema.toBuffer(value).equals(payload)) throw new Error('the key does not encode back to the same bytes (malformed Avro data)');
    return value;
  };
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class RegistrySchemas implements SchemaDecoders {
  /** The registry's URL without credentials, for messages. */
  readonly url: string;
  private readonly client: SchemaRegistry;
  /** null: the registry gave the schema, but keys cannot be decoded with it. */
  private readonly decoders = new Map<number, KeyDecoder | null>();
  /** Resolves under way, ended by close(): a registry that does not answer holds each for the whole timeout. */
  private readonly waiting = new Set<() => void>();
  private closed = false;

  constructor(
    setting: string,
    timeoutMs: number,
    private readonly log: Logger,
  ) {
    const endpoint = registryEndpoint(setting);
    this.url = endpoint.url;
    this.client = new SchemaRegistry(
      {
        host: endpoint.url,
        clientId: 'kcompact',
        ...(endpoint.auth ? { auth: endpoint.auth } : {}),
        // The indexer retries with its own backoff, partition by partition.
        retry: { retries: 0 },
        middlewares: [requestTimeout(timeoutMs)],
      },
      // Unknown keywords in a JSON Schema must not make its keys undecodable: only JSON is read.
      { [SchemaType.JSON]: { strict: false } },
    );
  }

  /** The decoder of a schema id resolved before: null when the schema cannot be used, undefined when not resolved yet. */
  decoderOf(id: number): KeyDecoder | null | undefined {
    return this.decoders.get(id);
  }

  /** Fetches the schemas not known yet; throws SchemaUnavailableError for the first that the registry did not give. */
  async resolve(ids: Iterable<number>): Promise<void> {
    const wanted = [...new Set(ids)].filter((id) => !this.decoders.has(id));
    if (wanted.length === 0) return;
    const results = await new Promise<PromiseSettledResult<void>[]>((resolve, reject) => {
      const stop = () => reject(new SchemaUnavailableError(wanted[0]!, this.url, 'the proxy is stopping'));
      if (this.closed) {
        stop();
        return;
      }
      this.waiting.add(stop);
      void Promise.allSettled(wanted.map((id) => this.fetch(id)))
        .then(resolve)
        .finally(() => this.waiting.delete(stop));
    });
    const failed = results.findIndex((r) => r.status === 'rejected');
    if (failed >= 0) throw new SchemaUnavailableError(wanted[failed]!, this.url, message((results[failed] as PromiseRejectedResult).reason));
  }

  /** Ends the resolves under way and refuses later ones: the proxy is stopping and waits for no registry. */
  close(): void {
    this.closed = true;
    for (const stop of this.waiting) stop();
    this.waiting.clear();
  }

  private async fetch(id: number): Promise<void> {
    let schema: Awaited<ReturnType<SchemaRegistry['getSchema']>>;
    try {
      schema = await this.client.getSchema(id);
    } catch (err) {
      // The library reports a schema it fetched but cannot build with this error; everything
      // else (HTTP status, connection, timeout) is the registry not answering.
      if ((err as Error)?.name !== 'ConfluentSchemaRegistryArgumentError') throw err;
      this.setUnusable(id, message(err));
      return;
    }
    const type = this.client.cache.getSchema(id)?.type;
    switch (type) {
      case SchemaType.AVRO:
        this.decoders.set(id, avroDecoder(schema as Parameters<typeof avroDecoder>[0]));
        break;
      case SchemaType.JSON:
        this.decoders.set(id, jsonDecoder);
        break;
      case SchemaType.PROTOBUF:
        this.decoders.set(id, protobufDecoder(schema));
        break;
      default:
        this.setUnusable(id, `schema type ${String(type)} is not supported`);
    }
  }

  private setUnusable(id: number, reason: string): void {
    this.log.warn('key schema cannot be used to decode keys; keys written with it keep their exact bytes as identity', {
      schemaId: id,
      registry: this.url,
      reason,
    });
    this.decoders.set(id, null);
  }
}
