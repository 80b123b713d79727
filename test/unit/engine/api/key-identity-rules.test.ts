import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkKeyIdentityRules, keyIdentityOf, registryPatterns } from '../../../../src/engine/api/key-identity-rules.js';

describe('key identity rules', () => {
  it('a topic takes its exact name first, then the first glob that matches in the order written, else exact bytes', () => {
    const modeOf = keyIdentityOf({ 'orders-*': 'registry', 'orders-eu': 'payload', '*-keys': 'payload', 'or*': 'bytes' });
    assert.equal(modeOf('orders-eu'), 'payload', 'exact name over an earlier glob');
    assert.equal(modeOf('orders-us'), 'registry');
    assert.equal(modeOf('orders-keys'), 'registry', 'the first matching glob');
    assert.equal(modeOf('users-keys'), 'payload');
    assert.equal(modeOf('ordinal'), 'bytes');
    assert.equal(modeOf('users'), 'bytes', 'no rule: exact bytes, as Kafka');
    assert.equal(keyIdentityOf({})('anything'), 'bytes');
  });

  it('globs match whole names, and the characters topic names use are literal', () => {
    const modeOf = keyIdentityOf({ 'a.b*': 'payload' });
    assert.equal(modeOf('a.b'), 'payload');
    assert.equal(modeOf('a.bc'), 'payload');
    assert.equal(modeOf('axb'), 'bytes', '. is not a wildcard');
    assert.equal(modeOf('xa.b'), 'bytes', 'anchored at the start');
  });

  it('accepts the three modes and lists the patterns that need the registry', () => {
    const rules = checkKeyIdentityRules({ t1: 'bytes', 't2-*': 'payload', '*': 'registry', x: 'registry' });
    assert.deepEqual(registryPatterns(rules), ['*', 'x']);
    assert.deepEqual(checkKeyIdentityRules({}), {});
  });

  it('refuses other shapes, unknown modes and glob syntax other than *, naming the entry', () => {
    const refused: [unknown, RegExp][] = [
      [[], /expected a JSON object of topic names or globs to one of bytes, payload, registry/],
      ['registry', /expected a JSON object/],
      [null, /expected a JSON object/],
      [{ orders: 'decoded' }, /topic pattern "orders": unknown key identity "decoded", expected one of bytes, payload, registry/],
      [{ orders: 1 }, /unknown key identity 1/],
      [{ 'orders-?': 'payload' }, /"orders-\?": only \* is a wildcard .*\? \[ \] \{ \} are not supported/],
      [{ 'orders-[ab]': 'payload' }, /only \* is a wildcard/],
      [{ '{a,b}': 'payload' }, /only \* is a wildcard/],
      [{ '': 'payload' }, /topic pattern "" must be a non-empty topic name or glob/],
      [{ ' orders': 'payload' }, /without surrounding spaces/],
    ];
    for (const [value, message] of refused) assert.throws(() => checkKeyIdentityRules(value), message, String(message));
  });
});
