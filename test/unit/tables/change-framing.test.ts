import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatCursor, ndjsonLine, parseCursor, sseCursor, sseEvent, sseRetry } from '../../../src/tables/change-framing.js';
import { ApiError } from '../../../src/tables/api-error.js';

test('an SSE event is its optional event and id lines, one data line of JSON, and a blank line', () => {
  assert.equal(sseEvent({ a: 'x\ny' }, { id: '0:5' }), 'id: 0:5\ndata: {"a":"x\\ny"}\n\n');
  assert.equal(sseEvent({ error: 'e' }, { event: 'failed' }), 'event: failed\ndata: {"error":"e"}\n\n');
  assert.equal(sseCursor('0:1,1:-1'), 'id: 0:1,1:-1\n\n');
  assert.equal(sseCursor('0:1', 'idle'), ': idle\nid: 0:1\n\n');
  assert.equal(sseRetry(1000), 'retry: 1000\n\n');
});

test('an NDJSON line is one JSON value and a line break', () => {
  assert.equal(ndjsonLine({ key: 'k', value: 'line\nbreak' }), '{"key":"k","value":"line\\nbreak"}\n');
});

test("a cursor lists every partition's last offset and reads back the same", () => {
  const cursor = new Map([
    [0, 41],
    [1, -1],
    [12, 7],
  ]);
  assert.equal(formatCursor(cursor), '0:41,1:-1,12:7');
  assert.deepEqual(parseCursor('0:41, 1:-1,12:7'), cursor);
  assert.deepEqual(parseCursor('3:9'), new Map([[3, 9]]));
});

test('a Last-Event-ID that is not a cursor is a 400 saying what to send', () => {
  for (const bad of ['', 'x', '0:', ':5', '0:5,0:6', '0:-2', '0:1.5', '99999999999999999999:1']) {
    assert.throws(
      () => parseCursor(bad),
      (err: unknown) => err instanceof ApiError && err.status === 400 && /not a change stream's cursor/.test(err.message),
      bad,
    );
  }
});
