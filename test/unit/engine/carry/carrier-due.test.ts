import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Carrier } from '../../../../src/engine/carry/carrier.js';
import { createLogger } from '../../../../src/common/log.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';
import { emptyPartition } from './fake-store.js';

const log = createLogger({ component: 'test' });

describe('Carrier: when a pass is due', () => {
  const carrier = () => new Carrier({ registry: emptyPartition().registry, leader: async () => assert.fail('no request'), log });

  it('not while the index is reading another carrier’s pass: it holds only the survivors read so far', () => {
    const { store, raw } = emptyPartition();
    // Cleaned past the store's log start, in the middle of a pass whose start marker is at 40.
    raw.checkpoint = { ...raw.checkpoint, logStartOffset: 30, firstDirty: 50, nextOffset: 60, lastStableOffset: 500 } as typeof raw.checkpoint;
    raw.carry = { ...raw.carry, openPass: 40, openRelease: 30, openTime: 1 };
    const c = carrier();
    assert.equal(c.due(store, DEFAULT_POLICY), false);
    // The pass ended: its survivors are all in the index.
    raw.carry = { ...raw.carry, openPass: -1, openRelease: -1, openTime: -1, pass: 40, passEnd: 45, passRelease: 30, passTime: 1 };
    assert.equal(c.due(store, DEFAULT_POLICY), true);
  });

  it('a pass stopped halfway holds nothing up once the index has read all the store held', () => {
    const { store, raw } = emptyPartition();
    raw.checkpoint = { ...raw.checkpoint, logStartOffset: 30, firstDirty: 50, nextOffset: 500, lastStableOffset: 500 } as typeof raw.checkpoint;
    raw.carry = { ...raw.carry, openPass: 40, openRelease: 30, openTime: 1 };
    assert.equal(carrier().due(store, DEFAULT_POLICY), true);
  });
});
