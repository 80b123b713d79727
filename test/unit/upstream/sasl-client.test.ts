import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plainMessage, saslAuthenticate, SaslAuthenticationError, ScramClient, type SaslConnection } from '../../../src/upstream/sasl-client.js';
import { ApiKey } from '../../../src/protocol/messages.js';
import { ErrorCode } from '../../../src/protocol/errors.js';

const text = (b: Buffer) => b.toString('utf8');

test('SCRAM-SHA-256 reproduces the exchange of RFC 7677, section 3', async () => {
  const scram = new ScramClient('sha256', 'user', 'pencil', 'rOprNGfwEbeRWgbNEkqO');
  assert.equal(text(scram.firstMessage()), 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO');
  const final = await scram.finalMessage(Buffer.from('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096'));
  assert.equal(text(final), 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=');
  scram.verifyServerFinal(Buffer.from('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4='));
});

test('the same logic over SHA-1 reproduces the exchange of RFC 5802, section 5', async () => {
  const scram = new ScramClient('sha1', 'user', 'pencil', 'fyko+d2lbbFgONRv9qkxdawL');
  assert.equal(text(scram.firstMessage()), 'n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL');
  const final = await scram.finalMessage(Buffer.from('r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096'));
  assert.equal(text(final), 'c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=');
  scram.verifyServerFinal(Buffer.from('v=rmF9pqV8S7suAoZWja4dJRkFsKQ='));
});

test('a server signature that does not match, or a server error, fails the exchange', async () => {
  const scram = new ScramClient('sha256', 'user', 'pencil', 'rOprNGfwEbeRWgbNEkqO');
  await scram.finalMessage(Buffer.from('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096'));
  assert.throws(() => scram.verifyServerFinal(Buffer.from('v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=')), /server signature does not match/);
  assert.throws(() => scram.verifyServerFinal(Buffer.from('v=')), /server signature does not match/);
  assert.throws(() => scram.verifyServerFinal(Buffer.from('e=invalid-proof')), /SCRAM server error: invalid-proof/);
});

test('server-first messages a client must refuse', async () => {
  const cases: [string, RegExp][] = [
    ['r=someoneElsesNonce123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096', /nonce does not extend the client nonce/],
    ['r=abc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096', /nonce does not extend the client nonce/],
    ['r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1024', /asked for 1024 iterations; at least 4096/],
    ['r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=lots', /asked for lots iterations/],
    ['r=abcdef,i=4096', /no salt/],
    ['m=ext,r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096', /extension/],
    ['e=unknown-user', /SCRAM server error: unknown-user/],
    ['garbage', /not of the form x=value/],
  ];
  for (const [serverFirst, pattern] of cases) {
    const scram = new ScramClient('sha256', 'user', 'pencil', 'abc');
    await assert.rejects(
      scram.finalMessage(Buffer.from(serverFirst)),
      (err: unknown) => err instanceof SaslAuthenticationError && pattern.test(err.message),
      serverFirst,
    );
  }
});

test('user names escape "," and "=" (RFC 5802 saslname); a fresh nonce each time', () => {
  assert.equal(text(new ScramClient('sha512', 'a=b,c', 'p', 'n1').firstMessage()), 'n,,n=a=3Db=2Cc,r=n1');
  const nonce = (m: Buffer) => text(m).split(',r=')[1]!;
  const one = nonce(new ScramClient('sha512', 'u', 'p').firstMessage());
  const two = nonce(new ScramClient('sha512', 'u', 'p').firstMessage());
  assert.notEqual(one, two);
  assert.ok(one.length >= 24 && !one.includes(','), one);
});

test('PLAIN is an empty authorization id, the user and the password, NUL-separated (RFC 4616)', () => {
  assert.deepEqual(plainMessage('alice', 'sécret'), Buffer.from('\0alice\0sécret', 'utf8'));
});

/** A connection that answers SaslHandshake and SaslAuthenticate from a script, recording what it was sent. */
function scripted(handshake: Record<string, unknown>, answers: Record<string, unknown>[], versions: Record<number, number> = {}) {
  const sent: { apiKey: number; version: number; body: Record<string, unknown> }[] = [];
  const conn: SaslConnection = {
    address: { host: 'broker', port: 9093 },
    version: (apiKey) => versions[apiKey] ?? (apiKey === ApiKey.SaslHandshake ? 1 : 2),
    // The scripted answers stand in for the decoded bodies (only the fields the exchange reads).
    request: (async (apiKey: number, version: number, body: Record<string, unknown>) => {
      sent.push({ apiKey, version, body });
      if (apiKey === ApiKey.SaslHandshake) return handshake;
      const next = answers.shift();
      if (!next) throw new Error('no more answers');
      return next;
    }) as SaslConnection['request'],
  };
  return { conn, sent };
}

test('PLAIN exchange: handshake, one SaslAuthenticate; the session lifetime is handed back', async () => {
  const { conn, sent } = scripted({ errorCode: 0, mechanisms: ['PLAIN'] }, [
    { errorCode: 0, errorMessage: null, authBytes: Buffer.alloc(0), sessionLifetimeMs: 60_000n },
  ]);
  assert.equal(await saslAuthenticate(conn, { mechanism: 'PLAIN', username: 'kc', password: 'pw' }), 60_000);
  assert.deepEqual(
    sent.map((s) => [s.apiKey, s.version]),
    [
      [ApiKey.SaslHandshake, 1],
      [ApiKey.SaslAuthenticate, 2],
    ],
  );
  assert.deepEqual(sent[0]!.body, { mechanism: 'PLAIN' });
  assert.deepEqual(sent[1]!.body.authBytes, Buffer.from('\0kc\0pw'));
});

test('refusals name the upstream, the user and the mechanism, and never the password', async () => {
  const password = 'hunter2-do-not-log';
  const cases: [Parameters<typeof scripted>, RegExp][] = [
    [
      [{ errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['PLAIN', 'SCRAM-SHA-256'] }, []],
      /upstream broker:9093 does not enable SASL mechanism SCRAM-SHA-512 \(it offers PLAIN, SCRAM-SHA-256\)/,
    ],
    [
      [{ errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [] }, []],
      /refused SaslHandshake for SCRAM-SHA-512 with error 34 \(ILLEGAL_SASL_STATE: is this a SASL listener/,
    ],
    [
      [
        { errorCode: 0, mechanisms: ['SCRAM-SHA-512'] },
        [
          {
            errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED,
            errorMessage: 'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512',
            authBytes: Buffer.alloc(0),
          },
        ],
      ],
      /upstream broker:9093 refused SASL authentication of user "kc" with SCRAM-SHA-512: Authentication failed .*; check upstreamSaslMechanism, upstreamSaslUsername and the password/,
    ],
    [
      [{ errorCode: 0, mechanisms: ['SCRAM-SHA-512'] }, [{ errorCode: 0, errorMessage: null, authBytes: Buffer.from('r=not-ours,s=c2FsdA==,i=4096') }]],
      /upstream broker:9093, user "kc" with SCRAM-SHA-512: SCRAM server nonce/,
    ],
    [[{ errorCode: 0, mechanisms: [] }, [], { [ApiKey.SaslHandshake]: 0 }], /offers only SaslHandshake v0/],
  ];
  for (const [args, pattern] of cases) {
    const { conn } = scripted(...args);
    await assert.rejects(saslAuthenticate(conn, { mechanism: 'SCRAM-SHA-512', username: 'kc', password }), (err: unknown) => {
      assert.ok(err instanceof SaslAuthenticationError);
      assert.match(err.message, pattern);
      assert.ok(!err.message.includes(password), err.message);
      return true;
    });
  }
});
