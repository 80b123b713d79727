// Byte vectors written out by hand from the protocol spec, so the codec is checked against
// the wire format itself and not only against its own encoder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeRequestHeader } from '../../../src/protocol/headers.js';
import { ApiKey, decodeRequest, decodeResponse, encodeRequest, encodeRequestFrame, encodeResponse } from '../../../src/protocol/messages.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

test('ApiVersions v3 request: compact client software name and version, empty tag section', () => {
  const body = hex(
    `
    09 6b636f6d70616374   # clientSoftwareName: uvarint 8+1, "kcompact"
    06 302e312e30         # clientSoftwareVersion: uvarint 5+1, "0.1.0"
    00                    # no tagged fields
  `.replace(/#.*$/gm, ''),
  );
  const decoded = decodeRequest(ApiKey.ApiVersions, 3, body);
  assert.equal(decoded.clientSoftwareName, 'kcompact');
  assert.equal(decoded.clientSoftwareVersion, '0.1.0');
  assert.deepStrictEqual(Object.keys(decoded), ['clientSoftwareName', 'clientSoftwareVersion']);
  assert.deepStrictEqual(encodeRequest(ApiKey.ApiVersions, 3, decoded), body);

  const frame = encodeRequestFrame({ apiKey: ApiKey.ApiVersions, apiVersion: 3, correlationId: 42, clientId: 'me' }, decoded);
  assert.deepStrictEqual(
    frame,
    Buffer.concat([
      hex((13 + body.length).toString(16).padStart(8, '0')), // size: 13 header bytes + body
      hex('0012 0003 0000002a'), // api key 18, version 3, correlation id 42
      hex('0002 6d65'), // client id "me", int16 length even in header v2
      hex('00'), // header tagged fields
      body,
    ]),
  );
  const header = decodeRequestHeader(frame.subarray(4));
  assert.equal(header.bodyOffset, 13);
});

test('ApiVersions v2 request has no fields', () => {
  assert.deepStrictEqual(decodeRequest(ApiKey.ApiVersions, 2, Buffer.alloc(0)), {});
  assert.equal(encodeRequest(ApiKey.ApiVersions, 2, { clientSoftwareName: 'ignored below v3' }).length, 0);
});

const metadataV12 = hex(
  `
  00000064                          # throttleTimeMs 100
  02                                # brokers: 1 element
    00000001 03 6231 00002384 00 00 # nodeId 1, host "b1", port 9092, rack null, no tags
  02 63                             # clusterId "c"
  00000001                          # controllerId 1
  02                                # topics: 1 element
    0000                            # errorCode 0
    02 74                           # name "t"
    000102030405060708090a0b0c0d0e0f # topicId
    00                              # isInternal false
    02                              # partitions: 1 element
      0000 00000000 00000001 00000005 # errorCode, partitionIndex 0, leaderId 1, leaderEpoch 5
      02 00000001                   # replicaNodes [1]
      02 00000001                   # isrNodes [1]
      01                            # offlineReplicas []
      00                            # no tags
    80000000                        # topicAuthorizedOperations INT32_MIN
    00                              # no tags
  00                                # no tags
`.replace(/#.*$/gm, ''),
);

test('Metadata v12 response with a topic id, field by field', () => {
  const d = decodeResponse(ApiKey.Metadata, 12, metadataV12);
  assert.equal(d.throttleTimeMs, 100);
  assert.deepStrictEqual(d.brokers, [{ nodeId: 1, host: 'b1', port: 9092, rack: null }]);
  assert.equal(d.clusterId, 'c');
  assert.equal(d.controllerId, 1);
  const topics = d.topics;
  assert.equal(topics.length, 1);
  const t = topics[0]!;
  assert.equal(t.errorCode, 0);
  assert.equal(t.name, 't');
  assert.equal(t.topicId, 'AAECAwQFBgcICQoLDA0ODw');
  assert.equal(t.isInternal, false);
  assert.deepStrictEqual(t.partitions, [
    {
      errorCode: 0,
      partitionIndex: 0,
      leaderId: 1,
      leaderEpoch: 5,
      replicaNodes: [1],
      isrNodes: [1],
      offlineReplicas: [],
    },
  ]);
  assert.equal(t.topicAuthorizedOperations, -2147483648);
  // Present only in v8-10 and v13+.
  assert.equal(d.clusterAuthorizedOperations, undefined);
  assert.equal(d.errorCode, undefined);
  assert.ok(!('errorCode' in d));
  assert.deepStrictEqual(encodeResponse(ApiKey.Metadata, 12, d), metadataV12);
});

test('Metadata v12: a null topic name and the zero uuid', () => {
  const body = { topics: [{ errorCode: 3, name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions: [] }] };
  const bytes = encodeResponse(ApiKey.Metadata, 12, body);
  // The topic starts after throttle(4) brokers(1) clusterId(1) controllerId(4) count(1).
  assert.deepStrictEqual(bytes.subarray(11, 11 + 2 + 1 + 16), hex('0003 00 00000000000000000000000000000000'));
  const topic = decodeResponse(ApiKey.Metadata, 12, bytes).topics[0]!;
  assert.equal(topic.name, null);
  assert.equal(topic.topicId, 'AAAAAAAAAAAAAAAAAAAAAA');
});

test('Fetch v4 request, field by field', () => {
  const bytes = hex(
    `
    ffffffff                # replicaId -1
    000001f4                # maxWaitMs 500
    00000001                # minBytes 1
    03200000                # maxBytes 52428800
    01                      # isolationLevel READ_COMMITTED
    00000001                # topics: 1 element
      0006 6f7264657273     # topic "orders"
      00000002              # partitions: 2 elements
        00000000 000000000000000a 00100000 # partition 0, fetchOffset 10, partitionMaxBytes 1 MiB
        00000003 0000000100000000 00100000 # partition 3, fetchOffset 2^32
  `.replace(/#.*$/gm, ''),
  );
  const d = decodeRequest(ApiKey.Fetch, 4, bytes);
  assert.deepStrictEqual(d, {
    replicaId: -1,
    maxWaitMs: 500,
    minBytes: 1,
    maxBytes: 52428800,
    isolationLevel: 1,
    topics: [
      {
        topic: 'orders',
        partitions: [
          { partition: 0, fetchOffset: 10n, partitionMaxBytes: 1048576 },
          { partition: 3, fetchOffset: 4294967296n, partitionMaxBytes: 1048576 },
        ],
      },
    ],
  });
  assert.deepStrictEqual(encodeRequest(ApiKey.Fetch, 4, d), bytes);
  // Fields of later versions are ignored when encoding v4.
  assert.deepStrictEqual(encodeRequest(ApiKey.Fetch, 4, { ...d, sessionId: 9, rackId: 'r1' }), bytes);
});

const fetchV16 = hex(
  `
  00000000 0000 00000000              # throttleTimeMs, errorCode, sessionId
  02                                  # responses: 1 element
    11111111111111111111111111111111  # topicId
    02                                # partitions: 1 element
      00000000 0006                   # partitionIndex 0, errorCode NOT_LEADER_OR_FOLLOWER
      0000000000000064 0000000000000064 0000000000000000 # highWatermark, lastStableOffset, logStartOffset
      00                              # abortedTransactions null
      ffffffff                        # preferredReadReplica -1
      05 61626364                     # records: 4 bytes
      01 01 09 00000002 00000007 00   # tags: CurrentLeader (tag 1, 9 bytes) leaderId 2, epoch 7
    00                                # topic: no tags
  01 00 0e 02 00000002 03 6232 00002384 00 00 # tags: NodeEndpoints (tag 0, 14 bytes)
`.replace(/#.*$/gm, ''),
);

test('Fetch v16 response: tagged fields, zero-copy records', () => {
  const d = decodeResponse(ApiKey.Fetch, 16, fetchV16);
  const partition = d.responses[0]!.partitions[0]!;
  assert.equal(d.responses[0]!.topicId, Buffer.alloc(16, 0x11).toString('base64url'));
  assert.equal(partition.errorCode, 6);
  assert.equal(partition.highWatermark, 100n);
  assert.equal(partition.abortedTransactions, null);
  assert.deepStrictEqual(partition.currentLeader, { leaderId: 2, leaderEpoch: 7 });
  // Absent tagged fields read as their defaults.
  assert.deepStrictEqual(partition.divergingEpoch, { epoch: -1, endOffset: -1n });
  assert.deepStrictEqual(partition.snapshotId, { endOffset: -1n, epoch: -1 });
  assert.deepStrictEqual(d.nodeEndpoints, [{ nodeId: 2, host: 'b2', port: 9092, rack: null }]);

  const records = partition.records as Buffer;
  assert.equal(records.toString(), 'abcd');
  assert.equal(records.buffer, fetchV16.buffer, 'records must be a view of the input');
  assert.equal(records.byteOffset, fetchV16.byteOffset + fetchV16.indexOf(hex('61626364')));

  assert.deepStrictEqual(encodeResponse(ApiKey.Fetch, 16, d), fetchV16);
  // Tagged fields at their default are left out, as Kafka does.
  partition.currentLeader = { leaderId: -1, leaderEpoch: -1 };
  d.nodeEndpoints = [];
  const canonical = encodeResponse(ApiKey.Fetch, 16, d);
  assert.equal(canonical.length, fetchV16.length - 11 - 16);
});

test('Fetch v16 response: a bad records length names the path', () => {
  const broken = Buffer.from(fetchV16.toString('hex').replace('0561626364', '892761626364'), 'hex');
  assert.throws(() => decodeResponse(ApiKey.Fetch, 16, broken), {
    name: 'ProtocolError',
    message: 'Fetch v16 response: responses[0].partitions[0].records: length 5000 exceeds remaining 34 bytes',
  });
});

test('unknown tagged fields are kept in _unknownTags and re-emitted in tag order', () => {
  // Metadata v12 top-level tags: unknown tag 5 (2 bytes) and tag 9 (0 bytes).
  const withTags = Buffer.concat([metadataV12.subarray(0, -1), hex('02 05 02 abcd 09 00')]);
  const d = decodeResponse(ApiKey.Metadata, 12, withTags);
  assert.deepStrictEqual(d._unknownTags, [
    { tag: 5, data: hex('abcd') },
    { tag: 9, data: Buffer.alloc(0) },
  ]);
  assert.deepStrictEqual(encodeResponse(ApiKey.Metadata, 12, d), withTags);
  d._unknownTags = [
    { tag: 9, data: Buffer.alloc(0) },
    { tag: 5, data: hex('abcd') },
  ];
  assert.deepStrictEqual(encodeResponse(ApiKey.Metadata, 12, d), withTags);

  // Known and unknown tags interleave by tag number.
  const fetch = decodeResponse(ApiKey.Fetch, 16, fetchV16);
  fetch._unknownTags = [{ tag: 1, data: hex('ee') }];
  const bytes = encodeResponse(ApiKey.Fetch, 16, fetch);
  assert.deepStrictEqual(bytes.subarray(-20), hex('02 00 0e 02 00000002 03 6232 00002384 00 00 01 01 ee'));
  assert.deepStrictEqual(decodeResponse(ApiKey.Fetch, 16, bytes), fetch);
});

test('missing fields encode as their schema defaults', () => {
  const d = decodeResponse(ApiKey.Metadata, 12, encodeResponse(ApiKey.Metadata, 12, {}));
  assert.deepStrictEqual(d, { throttleTimeMs: 0, brokers: [], clusterId: null, controllerId: -1, topics: [] });
  const p = decodeRequest(ApiKey.Fetch, 12, encodeRequest(ApiKey.Fetch, 12, { topics: [{ partitions: [{}] }] }));
  assert.deepStrictEqual(p, {
    clusterId: null,
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 0x7fffffff,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      { topic: '', partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: 0n, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 0 }] },
    ],
    forgottenTopicsData: [],
    rackId: '',
  });
});

test('ConsumerGroupHeartbeat v1 response: a nullable struct has an int8 marker', () => {
  const head = '00000000 0000 00 02 6d 00000005 00001388'; // throttle, error, message null, member "m", epoch 5, interval 5000
  const absent = hex(`${head} ff 00`);
  const d = decodeResponse(ApiKey.ConsumerGroupHeartbeat, 1, absent);
  assert.deepStrictEqual(d, {
    throttleTimeMs: 0,
    errorCode: 0,
    errorMessage: null,
    memberId: 'm',
    memberEpoch: 5,
    heartbeatIntervalMs: 5000,
    assignment: null,
  });
  assert.deepStrictEqual(encodeResponse(ApiKey.ConsumerGroupHeartbeat, 1, d), absent);

  const present = hex(`${head} 01 02 ${'22'.repeat(16)} 03 00000000 00000001 00 00 00`);
  const p = decodeResponse(ApiKey.ConsumerGroupHeartbeat, 1, present);
  assert.deepStrictEqual(p.assignment, { topicPartitions: [{ topicId: Buffer.alloc(16, 0x22).toString('base64url'), partitions: [0, 1] }] });
  assert.deepStrictEqual(encodeResponse(ApiKey.ConsumerGroupHeartbeat, 1, p), present);
});

test('a known tagged field must fill exactly its declared size', () => {
  const tooLong = Buffer.from(fetchV16.toString('hex').replace('010109000000020000000700', '01010b000000020000000700aabb'), 'hex');
  assert.throws(() => decodeResponse(ApiKey.Fetch, 16, tooLong), {
    name: 'ProtocolError',
    message: 'Fetch v16 response: responses[0].partitions[0].currentLeader: 2 of its 11 bytes left unread',
  });
  const tooShort = Buffer.from(fetchV16.toString('hex').replace('010109000000020000000700', '010108000000020000000700'), 'hex');
  assert.throws(
    () => decodeResponse(ApiKey.Fetch, 16, tooShort),
    /responses\[0\]\.partitions\[0\]\.currentLeader\.\(tagged fields\): unsigned varint runs past the end/,
  );
});
