import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyDigest, keyDigestInto, KEY_DIGEST_BYTES } from '../../../../src/engine/store/key-digest.js';
import {
  DecodedKeys,
  EXACT_BYTES,
  FRAME_PAYLOAD,
  type KeyDigester,
  type SchemaDecoders,
  type KeyDecoder,
} from '../../../../src/engine/key-identity/key-digesters.js';
import { KeyIdentities } from '../../../../src/engine/key-identity/key-identities.js';
import { SchemaUnavailableError } from '../../../../src/engine/key-identity/schema-unavailable.js';
import type { Logger } from '../../../../src/common/log.js';

function framed(schemaId: number, payload: string | Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeInt32BE(schemaId, 1);
  return Buffer.concat([header, typeof payload === 'string' ? Buffer.from(payload) : payload]);
}

/** Schemas as the registry would give them: JSON keys; `known` ids resolve, others are unavailable. */
class FakeSchemas implements SchemaDecoders {
  readonly decoders = new Map<number, KeyDecoder | null>();
  readonly asked: number[][] = [];
  constructor(private readonly known: Map<number, KeyDecoder | null>) {}
  decoderOf(id: number): KeyDecoder | null | undefined {
    return this.decoders.get(id);
  }
  async resolve(ids: Iterable<number>): Promise<void> {
    const list = [...ids];
    this.asked.push(list);
    for (const id of list) {
      if (!this.known.has(id)) throw new SchemaUnavailableError(id, 'http://registry.test', 'not found');
      this.decoders.set(id, this.known.get(id)!);
    }
  }
}

const json: KeyDecoder = (payload) => JSON.parse(payload.toString('utf8')) as unknown;

/** Digests keys the way collectRows does: into one buffer, then complete() if anything waits. */
async function digests(digester: KeyDigester, keys: Buffer[]): Promise<string[]> {
  const out = Buffer.alloc(keys.length * KEY_DIGEST_BYTES);
  keys.forEach((k, i) => digester.digestInto(k, out, i * KEY_DIGEST_BYTES));
  if (digester.pending) await digester.complete(out);
  return keys.map((_, i) => out.subarray(i * KEY_DIGEST_BYTES, (i + 1) * KEY_DIGEST_BYTES).toString('hex'));
}

const exact = (key: Buffer) => keyDigest(key).toString('hex');

function quietLog(lines: { msg: string; fields?: Record<string, unknown> }[] = []): Logger {
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: (msg, fields) => lines.push({ msg, ...(fields ? { fields } : {}) }),
    error: (msg, fields) => lines.push({ msg, ...(fields ? { fields } : {}) }),
    child: () => log,
    enabled: () => true,
  };
  return log;
}

describe('key digesters', () => {
  it('exact bytes: the digest of the whole key, framed or not', async () => {
    const keys = [Buffer.from('order-42'), framed(7, 'abc'), Buffer.alloc(0)];
    assert.deepEqual(await digests(EXACT_BYTES, keys), keys.map(exact));
    assert.equal(EXACT_BYTES.pending, false);
  });

  it('payload: a framed key without its header, so the same payload under another schema id is the same key', async () => {
    const [a, b, c, plain, short] = await digests(FRAME_PAYLOAD, [
      framed(7, 'abc'),
      framed(9, 'abc'),
      framed(7, 'abd'),
      Buffer.from('abc'),
      Buffer.from([0, 0, 7]),
    ]);
    assert.equal(a, b);
    assert.notEqual(a, c);
    assert.equal(plain, a, 'an unframed key with the same bytes is the same key');
    assert.equal(short, exact(Buffer.from([0, 0, 7])), 'too short to be framed: exact bytes');
    assert.equal((await digests(FRAME_PAYLOAD, [framed(3, '')]))[0], exact(Buffer.alloc(0)), 'a framed key with an empty payload');
  });

  it('decoded: one identity for the same value under any schema id, after fetching the schemas it had not seen', async () => {
    const schemas = new FakeSchemas(
      new Map([
        [7, json],
        [9, json],
      ]),
    );
    const digester = new DecodedKeys(schemas, () => assert.fail('nothing fails to decode'));
    const keys = [
      framed(7, '{"id":1,"zone":"eu"}'),
      framed(9, '{ "zone": "eu", "id": 1.0 }'),
      framed(7, '{"id":2,"zone":"eu"}'),
      Buffer.from('{"id":1,"zone":"eu"}'),
    ];
    keys.forEach((k, i) => digester.digestInto(k, Buffer.alloc(KEY_DIGEST_BYTES * 4), i * KEY_DIGEST_BYTES));
    assert.equal(digester.pending, true, 'ids 7 and 9 were not known');
    const [a, b, c, plain] = await digests(new DecodedKeys(schemas, () => {}), keys);
    assert.equal(a, b);
    assert.notEqual(a, c);
    assert.equal(plain, exact(keys[3]!), 'an unframed key keeps its exact bytes');
    assert.notEqual(a, exact(Buffer.from('{"id":1,"zone":"eu"}')), 'a decoded identity never equals an exact-bytes one, even of its canonical text');
    const seeded = Buffer.alloc(KEY_DIGEST_BYTES);
    const text = Buffer.from('{"id":1,"zone":"eu"}');
    keyDigestInto(text, 0, text.length, seeded, 0, 0x6b636d70);
    assert.equal(a, seeded.toString('hex'), 'the canonical text under the decoded seed');
  });

  it('asks the registry once per answer for every id it had not seen, then digests from the cache', async () => {
    const schemas = new FakeSchemas(
      new Map([
        [7, json],
        [9, json],
      ]),
    );
    await digests(new DecodedKeys(schemas, () => {}), [framed(7, '1'), framed(9, '2'), framed(7, '3')]);
    assert.deepEqual(schemas.asked, [[7, 9]]);
    const later = new DecodedKeys(schemas, () => {});
    later.digestInto(framed(9, '4'), Buffer.alloc(KEY_DIGEST_BYTES), 0);
    assert.equal(later.pending, false, 'a known id is digested at once');
  });

  it('writes deferred digests into the buffer given to complete(), which may have grown since', async () => {
    const schemas = new FakeSchemas(new Map([[7, json]]));
    const digester = new DecodedKeys(schemas, () => {});
    const small = Buffer.alloc(KEY_DIGEST_BYTES * 2);
    digester.digestInto(Buffer.from('plain'), small, 0);
    digester.digestInto(framed(7, '"x"'), small, KEY_DIGEST_BYTES);
    const grown = Buffer.alloc(KEY_DIGEST_BYTES * 8);
    small.copy(grown);
    await digester.complete(grown);
    assert.equal(digester.pending, false);
    assert.equal(grown.subarray(0, 16).toString('hex'), exact(Buffer.from('plain')));
    assert.deepEqual([grown.subarray(16, 32).toString('hex')], await digests(new DecodedKeys(schemas, () => {}), [framed(7, '"x"')]));
  });

  it('an id the registry does not give fails the answer with the id: nothing is guessed', async () => {
    const schemas = new FakeSchemas(new Map([[7, json]]));
    await assert.rejects(digests(new DecodedKeys(schemas, () => {}), [framed(7, '1'), framed(1234, '1')]), (err: unknown) => {
      return err instanceof SchemaUnavailableError && err.schemaId === 1234 && /schema id 1234 .* at http:\/\/registry\.test: not found/.test(err.message);
    });
  });

  it('a key that does not decode, or whose schema cannot be used, keeps its exact bytes; each failure is reported', async () => {
    const schemas = new FakeSchemas(
      new Map<number, KeyDecoder | null>([
        [7, json],
        [8, null],
      ]),
    );
    const failures: number[] = [];
    const keys = [framed(7, '{broken'), framed(7, 'NaN-free'), framed(8, '1'), framed(7, '1e999')];
    const got = await digests(new DecodedKeys(schemas, (id) => failures.push(id)), keys);
    assert.deepEqual(got, keys.map(exact));
    assert.deepEqual(failures, [7, 7, 7], 'not-JSON twice, and Infinity has no canonical form; the unusable schema is not a decode failure');
  });
});

describe('KeyIdentities', () => {
  it('picks the digester by the topic rules and needs a registry only for "registry"', async () => {
    const log = quietLog();
    const identities = new KeyIdentities({ 'p-*': 'payload', r: 'registry' }, new FakeSchemas(new Map([[7, json]])), log);
    assert.equal(identities.digester('other'), EXACT_BYTES);
    assert.equal(identities.digester('p-1'), FRAME_PAYLOAD);
    assert.ok(identities.digester('r') instanceof DecodedKeys);
    assert.equal(identities.modeOf('r'), 'registry');
    assert.throws(() => new KeyIdentities({ r: 'registry' }, undefined, log), /key identity "registry" for r needs a schema registry URL/);
    assert.equal(KeyIdentities.exactBytes(log).digester('r'), EXACT_BYTES);
  });

  it('logs a decode failure once per topic and schema id, not once per record', async () => {
    const lines: { msg: string; fields?: Record<string, unknown> }[] = [];
    const identities = new KeyIdentities({ '*': 'registry' }, new FakeSchemas(new Map([[7, json]])), quietLog(lines));
    for (const topic of ['a', 'a', 'b']) await digests(identities.digester(topic), [framed(7, '{'), framed(7, '[')]);
    assert.deepEqual(
      lines.map((l) => [l.fields?.topic, l.fields?.schemaId]),
      [
        ['a', 7],
        ['b', 7],
      ],
    );
    assert.match(lines[0]!.msg, /did not decode with its schema; such keys keep their exact bytes/);
  });
});
