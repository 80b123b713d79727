/**
 * The key identity of each compacted topic, for the indexer: its mode (recorded in each
 * partition's index, which is rebuilt when the mode changes) and a digester per fetched answer.
 */
import type { Logger } from '../../common/log.js';
import { DecodedKeys, EXACT_BYTES, FRAME_PAYLOAD, type KeyDigester, type SchemaDecoders } from './key-digesters.js';
import { keyIdentityOf, registryPatterns, type KeyIdentityMode, type KeyIdentityRules } from '../api/key-identity-rules.js';

export class KeyIdentities {
  readonly modeOf: (topic: string) => KeyIdentityMode;
  /** (topic, schema id) pairs whose decode failures were logged: one line each, not one per record. */
  private readonly warned = new Set<string>();

  constructor(
    rules: KeyIdentityRules,
    private readonly schemas: SchemaDecoders | undefined,
    private readonly log: Logger,
  ) {
    const needRegistry = registryPatterns(rules);
    if (needRegistry.length > 0 && !schemas) throw new Error(`key identity "registry" for ${needRegistry.join(', ')} needs a schema registry URL`);
    this.modeOf = keyIdentityOf(rules);
  }

  /** Every topic by its exact key bytes, as Kafka compares keys. */
  static exactBytes(log: Logger): KeyIdentities {
    return new KeyIdentities({}, undefined, log);
  }

  /** The digester for one fetched answer of the topic. */
  digester(topic: string): KeyDigester {
    switch (this.modeOf(topic)) {
      case 'bytes':
        return EXACT_BYTES;
      case 'payload':
        return FRAME_PAYLOAD;
      case 'registry':
        return new DecodedKeys(this.schemas!, (schemaId, err) => this.decodeFailed(topic, schemaId, err));
    }
  }

  private decodeFailed(topic: string, schemaId: number, err: unknown): void {
    const key = `${schemaId}\u0000${topic}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.log.warn('a key did not decode with its schema; such keys keep their exact bytes as identity', {
      topic,
      schemaId,
      reason: err instanceof Error ? err.message : String(err),
    });
  }
}
