import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiKey, decodeRequest, encodeRequestFrame } from '../../../src/protocol/messages.js';
import { patchRequestVersion } from '../../../src/proxy/request-version-patch.js';

test('a consumer Fetch v16+ request patched to v15 decodes as the same request', () => {
  const body = {
    replicaId: -1,
    maxWaitMs: 500,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 1,
    sessionId: 3,
    sessionEpoch: 2,
    clusterId: null,
    topics: [
      {
        topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
        partitions: [{ partition: 2, currentLeaderEpoch: 5, fetchOffset: 99n, lastFetchedEpoch: 4, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }],
      },
    ],
    forgottenTopicsData: [],
    rackId: 'r1',
  };
  const header = (apiVersion: number) => ({ apiKey: ApiKey.Fetch, apiVersion, correlationId: 1, clientId: 'c' });
  const bodyAt = 4 + 2 + 2 + 4 + 2 + 1 + 1; // size, key, version, correlation id, client id "c", no tags
  for (const version of [16, 17, 18]) {
    const frame = encodeRequestFrame(header(version), body);
    const original = Buffer.from(frame);
    patchRequestVersion(frame, 0, 15);
    assert.equal(frame.readInt16BE(6), 15);
    const asV15 = decodeRequest(ApiKey.Fetch, 15, frame, bodyAt);
    assert.deepEqual(encodeRequestFrame(header(version), asV15), original, `v${version} read as v15 and written back is the same request`);
  }
});

test('a version split across pieces is patched piece by piece', () => {
  const frame = Buffer.from([0, 0, 0, 20, 0, 1, 0, 17, 0, 0, 0, 9]);
  for (let cut = 0; cut <= frame.length; cut++) {
    const copy = Buffer.from(frame);
    const [a, b] = [copy.subarray(0, cut), copy.subarray(cut)];
    patchRequestVersion(a, 0, 15);
    patchRequestVersion(b, cut, 15);
    assert.equal(copy.readInt16BE(6), 15, `cut at ${cut}`);
    assert.deepEqual([...copy.subarray(0, 6), ...copy.subarray(8)], [...frame.subarray(0, 6), ...frame.subarray(8)]);
  }
});
