/**
 * How a record key becomes the 128-bit digest the index compares, one digester per key identity
 * mode. Only the digest changes with the mode: the cleaner and the fetch view see digests alone.
 *
 * - exact bytes: the key as Kafka compares it.
 * - frame payload: a framed key without its 5-byte header, so that the same payload under
 *   another schema id is the same key; an unframed key is its exact bytes (so a topic moving
 *   from unframed to framed keys with the same bytes keeps its keys).
 * - decoded: a framed key decoded with its writer schema, as canonical JSON. Decoded identities
 *   are digested with their own seed: they never equal an exact-bytes identity. An unframed key,
 *   a schema that cannot be used, and a key that does not decode keep their exact bytes.
 */
import { keyDigestInto } from '../store/key-digest.js';
import { canonicalJson } from './canonical-json.js';
import { FRAME_HEADER_BYTES, frameSchemaId, isFramed } from './confluent-framing.js';

export interface KeyDigester {
  /** Writes the key's digest into out[at, at + 16), or defers it until complete(). */
  digestInto(key: Buffer, out: Buffer, at: number): void;
  /** Whether some digests wait for complete(). */
  readonly pending: boolean;
  /**
   * Fetches what the deferred keys need and writes their digests into `out` (the buffer the
   * offsets given to digestInto refer to now). Throws SchemaUnavailableError when a schema
   * cannot be had; the digests are then unusable.
   */
  complete(out: Buffer): Promise<void>;
}

/** Decodes a framed key's payload (the bytes after the 5-byte header); throws when it does not decode. */
export type KeyDecoder = (payload: Buffer) => unknown;
/** The seed of decoded identities ("kcmp"); any non-zero constant separates them from exact bytes. */
const DECODED_SEED = 0x6b636d70;

const NOTHING_PENDING = { pending: false, complete: () => Promise.resolve() } as const;

export const EXACT_BYTES: KeyDigester = {
  ...NOTHING_PENDING,
  digestInto(key, out, at) {
    keyDigestInto(key, 0, key.length, out, at);
  },
};

/** The digest of a decoded key given as its canonical JSON (canonical-json.ts): a table read's key given as JSON. */
export function decodedDigestInto(canonical: string, out: Buffer, at: number): void {
  const bytes = Buffer.from(canonical, 'utf8');
  keyDigestInto(bytes, 0, bytes.length, out, at, DECODED_SEED);
}

export const FRAME_PAYLOAD: KeyDigester = {
  ...NOTHING_PENDING,
  digestInto(key, out, at) {
    keyDigestInto(key, isFramed(key) ? FRAME_HEADER_BYTES : 0, key.length, out, at);
  },
};

/** The writer schemas by id (registry-schemas.ts). */
export interface SchemaDecoders {
  /** null: the schema is known but cannot decode keys; undefined: not resolved yet. */
  decoderOf(schemaId: number): KeyDecoder | null | undefined;
  /** Makes every given id known, or throws SchemaUnavailableError. */
  resolve(schemaIds: Iterable<number>): Promise<void>;
}

/** Called when a framed key with a usable schema does not decode (it keeps its exact bytes). */
export type DecodeFailed = (schemaId: number, err: unknown) => void;

/** One per fetched answer: it collects the schema ids it has not seen yet. */
export class DecodedKeys implements KeyDigester {
  private readonly missing = new Set<number>();
  private readonly deferred: { key: Buffer; at: number }[] = [];

  constructor(
    private readonly schemas: SchemaDecoders,
    private readonly failed: DecodeFailed,
  ) {}

  get pending(): boolean {
    return this.deferred.length > 0;
  }

  digestInto(key: Buffer, out: Buffer, at: number): void {
    if (!isFramed(key)) {
      keyDigestInto(key, 0, key.length, out, at);
      return;
    }
    const schemaId = frameSchemaId(key);
    const decode = this.schemas.decoderOf(schemaId);
    if (decode === undefined) {
      this.missing.add(schemaId);
      this.deferred.push({ key, at });
      return;
    }
    let text: string | undefined;
    if (decode !== null) {
      try {
        text = canonicalJson(decode(key.subarray(FRAME_HEADER_BYTES)));
      } catch (err) {
        this.failed(schemaId, err);
      }
    }
    if (text === undefined) {
      keyDigestInto(key, 0, key.length, out, at);
      return;
    }
    decodedDigestInto(text, out, at);
  }

  async complete(out: Buffer): Promise<void> {
    await this.schemas.resolve(this.missing);
    this.missing.clear();
    for (const { key, at } of this.deferred.splice(0)) this.digestInto(key, out, at);
  }
}
