import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JudgedWrites, judgedVerdict } from '../../../../src/compaction/engine-client/judged-writes.js';
import type { LogEnd } from '../../../../src/engine/api/index-view.js';
import { seededRandom } from '../../../support/seeded-random.js';

const end = (to: number, voids: number[], voidsFrom: number): LogEnd => ({ indexedTo: to, visibleEnd: to, judged: { to, voids, voidsFrom } });

describe('judged writes', () => {
  it('tells a verdict only for records the end covers: judged, and past the horizon its voids start at', () => {
    const judged = end(20, [5, 9, 14], 4).judged;
    assert.equal(judgedVerdict(judged, 5), 'void');
    assert.equal(judgedVerdict(judged, 14), 'void');
    assert.equal(judgedVerdict(judged, 6), 'won');
    assert.equal(judgedVerdict(judged, 19), 'won');
    // Not judged yet, or below the horizon (where a void record is gone and tells nothing).
    assert.equal(judgedVerdict(judged, 20), undefined);
    assert.equal(judgedVerdict(judged, 3), undefined);
    assert.equal(judgedVerdict(undefined, 5), undefined);
    assert.equal(judgedVerdict(end(10, [], 0).judged, 0), 'won');
  });

  it('agrees with a linear search over random voids', () => {
    const rnd = seededRandom(5);
    for (let n = 0; n < 200; n++) {
      const voids = [...new Set(Array.from({ length: n % 17 }, () => Math.floor(rnd() * 50)))].sort((a, b) => a - b);
      const judged = end(50, voids, 0).judged;
      for (let o = 0; o < 50; o++) assert.equal(judgedVerdict(judged, o), voids.includes(o) ? 'void' : 'won');
    }
  });

  it('wakes a waiting write with the first end that judges it, and only its partition', async () => {
    let last: LogEnd | undefined;
    const writes = new JudgedWrites((topic, partition) => (topic === 't' && partition === 0 ? last : undefined));
    assert.equal(writes.now('t', 0, 7), undefined);
    const a = writes.watch('t', 0, 7);
    const b = writes.watch('t', 0, 8);
    const settled: string[] = [];
    void a.verdict.then((v) => settled.push(`a ${v}`));
    void b.verdict.then((v) => settled.push(`b ${v}`));
    writes.published('t', 1, end(10, [], 0));
    writes.published('t', 0, end(7, [], 0));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(settled, []);
    writes.published('t', 0, (last = end(8, [7], 0)));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(settled, ['a void']);
    assert.equal(writes.now('t', 0, 7), 'void');
    b.cancel();
    writes.published('t', 0, end(9, [7], 0));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(settled, ['a void'], 'a cancelled watch hears nothing');
  });

  it("takes the worker's foresight for the offset the store gave, and for no other", async () => {
    const writes = new JudgedWrites(() => undefined);
    const written = { key: Buffer.from('k'), condition: { ifMatch: 3 } };
    const other = { key: Buffer.from('k'), condition: { ifMatch: 3 } };
    const write = writes.expect('t', 0, written);
    const otherWrite = writes.expect('t', 0, other);
    writes.foreseen(write, 10, 'won');
    assert.equal(writes.now('t', 0, 10, written), 'won');
    assert.equal(writes.now('t', 0, 11, written), undefined, 'the record went elsewhere: foreseen for where it is not');
    assert.equal(writes.now('t', 0, 10, other), undefined, "another write's foresight is not this one's");
    const settled: string[] = [];
    void writes.watch('t', 0, 12, written).verdict.then((v) => settled.push(v));
    writes.foreseen(otherWrite, 12, 'won');
    writes.foreseen(write, 11, 'void');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(settled, []);
    writes.foreseen(write, 12, 'void');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(settled, ['void']);
    writes.forget(write);
    writes.foreseen(write, 13, 'won');
    assert.equal(writes.now('t', 0, 13, written), undefined, 'a forgotten write hears nothing more');
  });
});
