/**
 * Whether a fresh broker serves consumer groups yet. Its group coordinator first creates and
 * loads __consumer_offsets, answering COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS
 * meanwhile: Java, librdkafka, franz-go and kafka-python retry in silence, but kafkajs's
 * consumer crashes (and restarts itself), which a tail reader reports as errors. So readers of a
 * fresh broker start once this resolves.
 */
import { ApiKey } from '../../../src/protocol/messages.js';
import { pollUntil } from '../processes.js';
import { askOnce } from '../raw-client.js';

const FIND_COORDINATOR_VERSION = 4;
const OFFSET_FETCH_VERSION = 8;
const PROBE_GROUP = 'kcompact-tail-probe';
/** Group errors that mean the coordinator is not there yet. */
const NOT_YET = new Set([14 /* COORDINATOR_LOAD_IN_PROGRESS */, 15 /* COORDINATOR_NOT_AVAILABLE */, 16 /* NOT_COORDINATOR */]);

/** Resolves once the coordinator of a probe group answers OffsetFetch without error (others are retried too, and named at the deadline). */
export async function groupCoordinatorReady(bootstrap: string, timeoutMs = 60_000): Promise<void> {
  await pollUntil(`the group coordinator behind ${bootstrap}`, timeoutMs, async () => {
    const found = await askOnce(bootstrap, ApiKey.FindCoordinator, FIND_COORDINATOR_VERSION, { keyType: 0, coordinatorKeys: [PROBE_GROUP] });
    const c = found.coordinators[0];
    if (!c || NOT_YET.has(c.errorCode)) return undefined;
    if (c.errorCode !== 0) throw new Error(`FindCoordinator: error ${c.errorCode}`);
    const fetched = await askOnce(`${c.host}:${c.port}`, ApiKey.OffsetFetch, OFFSET_FETCH_VERSION, {
      groups: [{ groupId: PROBE_GROUP, topics: null }],
      requireStable: false,
    });
    const code: number = fetched.groups[0]?.errorCode ?? fetched.errorCode;
    if (NOT_YET.has(code)) return undefined;
    if (code !== 0) throw new Error(`OffsetFetch: error ${code}`);
    return true;
  });
}
