/**
 * FindCoordinator of groups, in whichever shape the broker speaks: one request for every key from
 * version 4 on (KIP-699), one request per key before it.
 */
import { ApiKey } from '../protocol/messages.js';
import { ErrorCode } from '../protocol/errors.js';
import type { UpstreamClient } from './client.js';

export interface GroupCoordinator {
  key: string;
  nodeId: number;
  errorCode: number;
}

const GROUP_KEY = 0;

/** The coordinator of each group, as `client`'s broker answers; an error per group, not thrown. */
export async function groupCoordinators(client: UpstreamClient, groups: readonly string[]): Promise<GroupCoordinator[]> {
  const version = client.version(ApiKey.FindCoordinator);
  if (version >= 4) {
    const res = await client.request(ApiKey.FindCoordinator, version, { keyType: GROUP_KEY, coordinatorKeys: [...groups] });
    return (res.coordinators ?? []).map((c) => ({ key: c.key, nodeId: c.nodeId, errorCode: c.errorCode }));
  }
  return Promise.all(
    groups.map(async (key) => {
      const res = await client.request(ApiKey.FindCoordinator, version, { key, keyType: GROUP_KEY });
      return { key, nodeId: res.nodeId ?? -1, errorCode: res.errorCode ?? ErrorCode.NONE };
    }),
  );
}
