/**
 * A one-broker upstream that serves what a proxy asks for itself (Metadata, an empty configs
 * topic, the carrier group's coordinator) until told to fail: answer every Fetch with an error,
 * stop answering anything (a hung broker: connections are still accepted), or refuse every
 * connection. Which requests arrived while it was silent, and from which client id, shows what
 * is left waiting on it.
 *
 * Its carrier group coordinator gives a member id to the first JoinGroup and parks every later
 * one, as a coordinator does while the group rebalances: the member then has a group to leave.
 */
import net from 'node:net';
import { FrameReader } from '../../src/protocol/wire/frame-reader.js';
import { decodeRequestHeader } from '../../src/protocol/headers.js';
import { ErrorCode } from '../../src/protocol/errors.js';
import { ApiKey, apiSchema, decodeRequest, encodeResponseFrame } from '../../src/protocol/messages.js';
import { ZERO_UUID } from '../../src/protocol/wire/uuid.js';
import { CONFIGS_TOPIC } from '../../src/compaction/config/configs-topic.js';

/** `serve`: answers; `fail`: Fetch answered with an error; `silent`: nothing answered, not even ApiVersions. */
export type UpstreamMode = 'serve' | 'fail' | 'silent';

export interface FailingUpstream {
  address: string;
  setMode(mode: UpstreamMode): void;
  /** Closes every connection open now (the next requests need new ones). */
  dropConnections(): void;
  /** Requests that arrived while silent, as "clientId api". */
  unanswered(): string[];
  /** Whether a JoinGroup is parked (the member has an id). */
  memberJoined(): boolean;
  /** Stops listening and closes every connection: connections are refused from now on. */
  close(): Promise<void>;
}

/** Names and not ids: the fake knows its one topic by name. */
const FETCH_MAX_VERSION = 12;
const SERVED = [ApiKey.ApiVersions, ApiKey.Metadata, ApiKey.Fetch, ApiKey.FindCoordinator, ApiKey.JoinGroup, ApiKey.LeaveGroup];
/** A Fetch that would wait for records is answered after this long, so the indexer does not spin. */
const FETCH_WAIT_MS = 200;

export async function startFailingUpstream(): Promise<FailingUpstream> {
  let mode: UpstreamMode = 'serve';
  let port = 0;
  let joined = false;
  const unanswered: string[] = [];
  const sockets = new Set<net.Socket>();

  const respond = (socket: net.Socket, apiKey: number, version: number, correlationId: number, body: object) => {
    if (!socket.destroyed) socket.write(encodeResponseFrame(apiKey, version, correlationId, body));
  };
  const onRequest = (frame: Buffer, socket: net.Socket) => {
    const header = decodeRequestHeader(frame);
    const { apiKey, apiVersion: version, correlationId } = header;
    if (mode === 'silent') {
      unanswered.push(`${header.clientId} ${apiSchema(apiKey)?.name ?? apiKey}`);
      return;
    }
    const answer = (body: object) => respond(socket, apiKey, version, correlationId, body);
    const request = () => decodeRequest(apiKey, version, frame, header.bodyOffset ?? 0) as Record<string, unknown>;
    switch (apiKey) {
      case ApiKey.ApiVersions:
        answer({
          errorCode: 0,
          apiKeys: SERVED.map((k) => ({
            apiKey: k,
            minVersion: apiSchema(k)!.minVersion,
            maxVersion: k === ApiKey.Fetch ? FETCH_MAX_VERSION : apiSchema(k)!.maxVersion,
          })),
        });
        return;
      case ApiKey.Metadata: {
        const asked = request().topics as { name: string | null }[] | null;
        const names = asked === null ? [CONFIGS_TOPIC] : asked.map((t) => t.name ?? '');
        answer({
          brokers: [{ nodeId: 0, host: '127.0.0.1', port, rack: null }],
          clusterId: 'failing-upstream',
          controllerId: 0,
          topics: names.map((name) =>
            name === CONFIGS_TOPIC
              ? {
                  errorCode: 0,
                  name,
                  topicId: ZERO_UUID,
                  partitions: [{ errorCode: 0, partitionIndex: 0, leaderId: 0, leaderEpoch: 0, replicaNodes: [0], isrNodes: [0], offlineReplicas: [] }],
                }
              : { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, topicId: ZERO_UUID, partitions: [] },
          ),
        });
        return;
      }
      case ApiKey.Fetch: {
        const fetch = request() as { maxWaitMs: number; topics: { topic: string; partitions: { partition: number }[] }[] };
        const errorCode = mode === 'fail' ? ErrorCode.KAFKA_STORAGE_ERROR : 0;
        const body = {
          throttleTimeMs: 0,
          errorCode: 0,
          sessionId: 0,
          responses: fetch.topics.map((t) => ({
            topic: t.topic,
            partitions: t.partitions.map((p) => ({
              partitionIndex: p.partition,
              errorCode,
              highWatermark: 0n,
              lastStableOffset: 0n,
              logStartOffset: 0n,
              abortedTransactions: null,
              preferredReadReplica: -1,
              records: null,
            })),
          })),
        };
        if (fetch.maxWaitMs > 0) setTimeout(() => answer(body), Math.min(fetch.maxWaitMs, FETCH_WAIT_MS));
        else answer(body);
        return;
      }
      case ApiKey.FindCoordinator: {
        const coordinator = { nodeId: 0, host: '127.0.0.1', port, errorCode: 0, errorMessage: null };
        if (version >= 4) answer({ coordinators: (request().coordinatorKeys as string[]).map((key) => ({ key, ...coordinator })) });
        else answer(coordinator);
        return;
      }
      case ApiKey.JoinGroup:
        if (joined) return;
        joined = true;
        answer({ errorCode: ErrorCode.MEMBER_ID_REQUIRED, generationId: -1, protocolName: null, leader: '', memberId: 'member-1', members: [] });
        return;
      case ApiKey.LeaveGroup:
        answer({ errorCode: 0, members: [{ memberId: 'member-1', groupInstanceId: null, errorCode: 0 }] });
        return;
    }
  };

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const reader = new FrameReader(1 << 24);
    socket.on('data', (chunk: Buffer) => reader.push(chunk, (frame) => onRequest(Buffer.from(frame.subarray(4)), socket)));
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  port = (server.address() as net.AddressInfo).port;
  const dropConnections = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    address: `127.0.0.1:${port}`,
    setMode: (next) => (mode = next),
    dropConnections,
    unanswered: () => [...unanswered],
    memberJoined: () => joined,
    close: () =>
      new Promise<void>((resolve) => {
        dropConnections();
        server.close(() => resolve());
      }),
  };
}
