/**
 * Where the share groups (KIP-932) reading a partition stand, as the store's coordinators keep
 * them: each group's start offset is the first offset it has not finished with (below it every
 * record was acknowledged or archived). A store that lets a range go moves a group that had not
 * finished it past it, so a pass lets a range go only as far as the least of them: survivors a
 * group has not read yet stay in the store where the group will read them, as Kafka's cleaner
 * keeps them for it (docs/carrying.md, "A pass").
 *
 * Asked only when a pass would let a range go. Groups this replica's principal may not describe
 * are not listed by the store (ListGroups lists only those), so they hold nothing.
 */
import type { ShareGroupStart } from '../api/engine-reports.js';
import { ApiKey } from '../../protocol/messages.js';
import { ErrorCode } from '../../protocol/errors.js';
import type { UpstreamClient } from '../../upstream/client.js';
import { groupCoordinators } from '../../upstream/group-coordinators.js';
import { UpstreamError } from '../../upstream/error-class.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';

/** Whether the broker speaks the API at all (a store without share groups does not). */
function speaks(client: UpstreamClient, apiKey: number): boolean {
  try {
    client.version(apiKey);
    return true;
  } catch {
    return false;
  }
}

/** The share groups every broker coordinates (ListGroups is answered per broker); undefined when no broker has share groups. */
async function shareGroups(cluster: UpstreamClusterClient): Promise<string[] | undefined> {
  const { brokers } = await cluster.metadata([]);
  const lists = await Promise.all(
    brokers.map(async (b) => {
      const client = await cluster.broker(b.nodeId, 'admin');
      if (!speaks(client, ApiKey.DescribeShareGroupOffsets) || client.version(ApiKey.ListGroups) < 5) return undefined;
      const res = await client.request(ApiKey.ListGroups, client.version(ApiKey.ListGroups), { statesFilter: [], typesFilter: ['share'] });
      if (res.errorCode !== ErrorCode.NONE) throw new UpstreamError(`ListGroups of share groups from upstream broker ${b.nodeId}`, res.errorCode);
      return res.groups.map((g) => g.groupId);
    }),
  );
  if (lists.every((l) => l === undefined)) return undefined;
  return [...new Set(lists.flatMap((l) => l ?? []))];
}

/** The groups by the node id of their coordinator. */
async function coordinators(cluster: UpstreamClusterClient, groups: readonly string[]): Promise<Map<number, string[]>> {
  const found = await groupCoordinators(await cluster.any('admin'), groups);
  const byNode = new Map<number, string[]>();
  for (const c of found) {
    if (c.errorCode !== ErrorCode.NONE) throw new UpstreamError(`FindCoordinator of share group ${c.key}`, c.errorCode);
    byNode.set(c.nodeId, [...(byNode.get(c.nodeId) ?? []), c.key]);
  }
  return byNode;
}

/** Group errors after which the group holds nothing: it is gone, or this replica may not see it. */
const NOT_HOLDING = new Set<number>([ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED]);

/**
 * The share groups with a state for the partition and their start offsets; undefined when the
 * store has no share groups at all. Throws when the store could not say (a coordinator moving, a
 * timeout): the caller keeps the range until it can.
 */
export async function shareGroupStarts(cluster: UpstreamClusterClient, topic: string, partition: number): Promise<ShareGroupStart[] | undefined> {
  const groups = await shareGroups(cluster);
  if (groups === undefined) return undefined;
  const starts: ShareGroupStart[] = [];
  if (groups.length === 0) return starts;
  for (const [nodeId, ids] of await coordinators(cluster, groups)) {
    const client = await cluster.broker(nodeId, 'admin');
    const res = await client.request(ApiKey.DescribeShareGroupOffsets, client.version(ApiKey.DescribeShareGroupOffsets), {
      groups: ids.map((groupId) => ({ groupId, topics: [{ topicName: topic, partitions: [partition] }] })),
    });
    for (const g of res.groups) {
      if (NOT_HOLDING.has(g.errorCode)) continue;
      if (g.errorCode !== ErrorCode.NONE) throw new UpstreamError(`DescribeShareGroupOffsets of share group ${g.groupId}`, g.errorCode, g.errorMessage);
      for (const t of g.topics) {
        if (t.topicName !== topic) continue;
        for (const p of t.partitions) {
          if (p.partitionIndex !== partition || NOT_HOLDING.has(p.errorCode)) continue;
          if (p.errorCode !== ErrorCode.NONE)
            throw new UpstreamError(`DescribeShareGroupOffsets of ${topic}-${partition} for share group ${g.groupId}`, p.errorCode, p.errorMessage);
          const offset = Number(p.startOffset);
          // -1: the group has no state for the partition (it never read it).
          if (offset >= 0) starts.push({ group: g.groupId, offset });
        }
      }
    }
  }
  return starts;
}

/** The group that has finished the least of the partition, or undefined when none reads it. */
export function leastOf(starts: readonly ShareGroupStart[] | undefined): ShareGroupStart | undefined {
  let least: ShareGroupStart | undefined;
  for (const s of starts ?? []) if (least === undefined || s.offset < least.offset) least = s;
  return least;
}
