/**
 * This replica's membership of the carrier group: the replicas in front of one store join a
 * group on the store's own coordinator (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; protocol
 * type `kcompact`), as Kafka Connect's workers do, and the leader's assignment
 * (carrier-assignment.ts) gives every compacted partition one carrier. A member hears of a new
 * generation's assignment through `onAssigned` and of losing it through `onRevoked`, before it
 * joins again: whatever carries must stop before another member may start.
 *
 * The loop: find the coordinator, join (a first JoinGroup gets MEMBER_ID_REQUIRED and a member
 * id to join with), sync (the leader sends the assignment), then heartbeat every third of the
 * session timeout until the coordinator says the group rebalances or forgot this member, and join
 * again. Errors of the coordinator's place (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a broken
 * connection) find the coordinator again after a backoff.
 */
import type { CarrierGroupStatus } from '../api/engine-reports.js';
import { SYSTEM_CLOCK, type Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import { ErrorCode, errorName } from '../../protocol/errors.js';
import { ApiKey } from '../../protocol/messages.js';
import type { UpstreamClient } from '../../upstream/client.js';
import { groupCoordinators } from '../../upstream/group-coordinators.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import { backoffMs } from '../../upstream/backoff.js';
import { assignCarriers, type CarriedPartition } from './carrier-assignment.js';
import {
  CARRIER_PROTOCOL_NAME,
  CARRIER_PROTOCOL_TYPE,
  decodeCarrierAssignment,
  decodeCarrierMetadata,
  encodeCarrierAssignment,
  encodeCarrierMetadata,
} from './carrier-protocol.js';
import { partitionKey } from '../api/partition-key.js';
import type { ElectionOptions } from '../api/engine-options.js';

export interface CarrierGroupOptions extends ElectionOptions {
  upstream: UpstreamClusterClient;
  rebalanceTimeoutMs: number;
  /** The partitions that need a carrier now (the leader assigns these). */
  partitions(): CarriedPartition[];
  /** A generation's assignment to this member. */
  onAssigned(generation: number, carried: CarriedPartition[]): void;
  /** This member's assignment no longer holds: stop carrying before anything else. */
  onRevoked(): void;
  log: Logger;
  /** The first wait after a failure; the waits double up to 30 s while failures go on. */
  backoffMs?: number;
  /** What the loop's waits sleep on (the system clock by default). */
  clock?: Clock;
}

const MAX_BACKOFF_MS = 30_000;
/**
 * How long stop() waits for LeaveGroup: a coordinator that is up answers at once, and one that
 * is not must not hold the shutdown (its session timeout hands the partitions over instead).
 */
const LEAVE_TIMEOUT_MS = 2_000;
const SETTLED_POLL_MS = 20;

const keyOf = (partitions: readonly CarriedPartition[]) =>
  partitions
    .map((p) => partitionKey(p.topic, p.partition))
    .sort()
    .join('\u0001');

const COORDINATOR_ERRORS = new Set<number>([ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]);

class GroupError extends Error {
  constructor(
    readonly what: string,
    readonly code: number,
  ) {
    super(`${what} of the carrier group answered ${errorName(code)}`);
  }
}

export class CarrierGroup {
  private memberId = '';
  private generation = -1;
  private leader = false;
  /** The last assignment: what this member claims when it joins again. */
  private carried: CarriedPartition[] = [];
  /** The same, to look partitions up in (partition-key.ts). */
  private carriedKeys = new Set<string>();
  /** Whether that assignment holds now (between SyncGroup and the next revocation). */
  private active = false;
  private coordinator: UpstreamClient | undefined;
  private coordinatorId = -1;
  /** As leader: the partitions the last assignment divided (a change asks for a new one). */
  private assignedKey: string | undefined;
  private lastError: string | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private rejoinAsked = false;
  private readonly clock: Clock;

  constructor(private readonly opts: CarrierGroupOptions) {
    this.clock = opts.clock ?? SYSTEM_CLOCK;
  }

  start(): void {
    this.running ??= this.loop();
  }

  /**
   * Leaves the group (the others take this member's partitions at once) and stops, without
   * waiting for a JoinGroup in flight: the coordinator parks one until the rebalance ends, and
   * a replica told to stop must not hold its partitions that long. LeaveGroup goes on a
   * connection of its own, since the coordinator answers a connection's requests in turn.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    this.revoke();
    if (this.memberId && this.coordinatorId >= 0) {
      const leaving = this.opts.upstream
        .broker(this.coordinatorId, 'admin')
        .then((c) =>
          c.request(ApiKey.LeaveGroup, c.version(ApiKey.LeaveGroup), {
            groupId: this.opts.groupId,
            memberId: this.memberId,
            members: [{ memberId: this.memberId, reason: 'the replica stops' }],
          }),
        )
        .then((res) => {
          const code = res.errorCode || res.members?.[0]?.errorCode || ErrorCode.NONE;
          if (code !== ErrorCode.NONE) throw new GroupError('LeaveGroup', code);
        })
        .catch((err: unknown) => this.opts.log.debug('leaving the carrier group failed; the coordinator drops this member after its session timeout', { err }));
      await this.within(leaving, LEAVE_TIMEOUT_MS);
    }
    // A heartbeat or JoinGroup in flight ends with the upstream client's close.
    await this.within(this.running, 100);
  }

  /** Waits for `work`, at most `ms`; the wait's timer goes with it, so it holds nothing up after. */
  private async within(work: Promise<unknown> | undefined, ms: number): Promise<void> {
    const done = new AbortController();
    try {
      await Promise.race([work, this.clock.sleep(ms, done.signal)]);
    } finally {
      done.abort();
    }
  }

  /**
   * Whether this member's assignment still holds at the coordinator now: a heartbeat of its
   * generation, answered without error. Asked before each step of a carry that others would see
   * (writing a pass, letting a range go): a member that missed a rebalance (paused, cut off)
   * learns it here and stops, rather than writing beside the member that took over.
   */
  async confirm(): Promise<boolean> {
    const c = this.coordinator;
    if (!this.active || !c || c.closed) return false;
    try {
      const res = await c.request(ApiKey.Heartbeat, c.version(ApiKey.Heartbeat), {
        groupId: this.opts.groupId,
        generationId: this.generation,
        memberId: this.memberId,
        groupInstanceId: null,
      });
      if (res.errorCode === ErrorCode.NONE) return true;
      // The loop's own next heartbeat meets the same answer and joins again.
      this.revoke();
      this.wake?.();
      return false;
    } catch {
      return false;
    }
  }

  /** Whether this member carries the partition as far as it knows (confirm() asks the coordinator). */
  holds(topic: string, partition: number): boolean {
    return this.active && this.carriedKeys.has(partitionKey(topic, partition));
  }

  /**
   * Waits, up to `timeoutMs`, until this member holds an assignment that no rejoin it asked for
   * is about to replace: an on-demand clean then carries what this replica carries now.
   */
  async settled(timeoutMs: number): Promise<boolean> {
    const deadline = this.clock.now() + timeoutMs;
    while (!this.stopped && (!this.active || this.rejoinAsked)) {
      if (this.clock.now() >= deadline) return false;
      await this.clock.sleep(SETTLED_POLL_MS);
    }
    return this.active;
  }

  /** Asks for a new assignment (the partitions that need a carrier changed). */
  rejoin(): void {
    this.rejoinAsked = true;
    this.wake?.();
  }

  /**
   * The partitions that need a carrier may have changed (a topic created, deleted, grown): the
   * leader, whose view the assignment follows, asks for a new one when they differ from what it
   * divided. Other members' views do not count, so a change costs one rebalance, not one each.
   */
  partitionsChanged(): void {
    if (this.active && this.leader && this.assignedKey !== keyOf(this.opts.partitions())) this.rejoin();
  }

  status(): CarrierGroupStatus {
    return {
      groupId: this.opts.groupId,
      state: this.active ? 'stable' : 'joining',
      memberId: this.memberId,
      generation: this.generation,
      leader: this.leader,
      carried: this.active ? [...this.carried] : [],
      ...(this.lastError !== undefined && { lastError: this.lastError }),
    };
  }

  private async loop(): Promise<void> {
    const { log } = this.opts;
    let failures = 0;
    while (!this.stopped) {
      try {
        this.coordinator ??= await this.findCoordinator();
        await this.joinAndSync(this.coordinator);
        if (failures > 0) log.info('joined the carrier group again', { groupId: this.opts.groupId, after: failures });
        failures = 0;
        this.lastError = undefined;
        await this.heartbeat(this.coordinator);
      } catch (err) {
        if (this.stopped) return;
        this.revoke();
        if (err instanceof GroupError) {
          if (err.code === ErrorCode.UNKNOWN_MEMBER_ID) this.memberId = '';
          if (COORDINATOR_ERRORS.has(err.code)) this.coordinator = undefined;
          if (err.code === ErrorCode.REBALANCE_IN_PROGRESS || err.code === ErrorCode.ILLEGAL_GENERATION || err.code === ErrorCode.UNKNOWN_MEMBER_ID) continue;
        } else {
          this.coordinator = undefined;
        }
        failures++;
        this.lastError = err instanceof Error ? err.message : String(err);
        // The coordinator moving or starting (its offsets topic being created) is routine; a
        // store that refuses groups is said once, then every tenth attempt.
        const routine = err instanceof GroupError && COORDINATOR_ERRORS.has(err.code);
        const wait = backoffMs(failures, { baseMs: this.opts.backoffMs ?? 1000, maxMs: MAX_BACKOFF_MS });
        log[routine || failures % 10 !== 1 ? 'debug' : 'warn']('the carrier group failed; this replica carries nothing until it joins again', {
          groupId: this.opts.groupId,
          attempt: failures,
          retryInMs: wait,
          err,
        });
        await this.sleep(wait);
      }
    }
  }

  private async findCoordinator(): Promise<UpstreamClient> {
    const { upstream, groupId } = this.opts;
    const [c] = await groupCoordinators(await upstream.any(), [groupId]);
    if (!c) throw new Error('FindCoordinator of the carrier group answered no coordinator');
    if (c.errorCode !== ErrorCode.NONE) throw new GroupError('FindCoordinator', c.errorCode);
    const client = await upstream.broker(c.nodeId, 'group');
    this.coordinatorId = c.nodeId;
    return client;
  }

  private async joinAndSync(c: UpstreamClient): Promise<void> {
    const { groupId, sessionTimeoutMs, rebalanceTimeoutMs } = this.opts;
    const metadata = encodeCarrierMetadata({ generation: this.generation, owned: this.carried });
    this.revoke();
    const joinVersion = c.version(ApiKey.JoinGroup);
    const join = () =>
      c.request(
        ApiKey.JoinGroup,
        joinVersion,
        {
          groupId,
          sessionTimeoutMs,
          rebalanceTimeoutMs,
          memberId: this.memberId,
          groupInstanceId: null,
          protocolType: CARRIER_PROTOCOL_TYPE,
          protocols: [{ name: CARRIER_PROTOCOL_NAME, metadata }],
          reason: null,
        },
        undefined,
        rebalanceTimeoutMs + sessionTimeoutMs,
      );
    let joined = await join();
    if (joined.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
      this.memberId = joined.memberId;
      joined = await join();
    }
    if (joined.errorCode !== ErrorCode.NONE) throw new GroupError('JoinGroup', joined.errorCode);
    this.memberId = joined.memberId;
    const generation = joined.generationId;
    this.leader = joined.leader === this.memberId;
    const assignments = this.leader ? this.assign(joined.members.map((m) => ({ memberId: m.memberId, metadata: m.metadata }))) : [];
    const synced = await c.request(ApiKey.SyncGroup, c.version(ApiKey.SyncGroup), {
      groupId,
      generationId: generation,
      memberId: this.memberId,
      groupInstanceId: null,
      protocolType: CARRIER_PROTOCOL_TYPE,
      protocolName: CARRIER_PROTOCOL_NAME,
      assignments,
    });
    if (synced.errorCode !== ErrorCode.NONE) throw new GroupError('SyncGroup', synced.errorCode);
    this.generation = generation;
    this.carried = decodeCarrierAssignment(synced.assignment);
    this.carriedKeys = new Set(this.carried.map((p) => partitionKey(p.topic, p.partition)));
    this.rejoinAsked = false;
    this.active = true;
    this.opts.onAssigned(generation, [...this.carried]);
  }

  private assign(members: { memberId: string; metadata: Buffer }[]): { memberId: string; assignment: Buffer }[] {
    const decoded = members.map((m) => {
      try {
        const meta = decodeCarrierMetadata(m.metadata);
        return { memberId: m.memberId, owned: meta.owned, generation: meta.generation };
      } catch (err) {
        this.opts.log.warn('a carrier group member sent metadata kcompact cannot read; it is given partitions afresh', { memberId: m.memberId, err });
        return { memberId: m.memberId, owned: [], generation: -1 };
      }
    });
    const partitions = this.opts.partitions();
    this.assignedKey = keyOf(partitions);
    const assignment = assignCarriers(decoded, partitions);
    return members.map((m) => ({ memberId: m.memberId, assignment: encodeCarrierAssignment(assignment.get(m.memberId) ?? []) }));
  }

  /** Heartbeats until the group asks this member to join again (a GroupError) or a rejoin is asked for. */
  private async heartbeat(c: UpstreamClient): Promise<void> {
    const interval = Math.max(100, Math.floor(this.opts.sessionTimeoutMs / 3));
    while (!this.stopped && !this.rejoinAsked) {
      await this.sleep(interval);
      if (this.stopped || this.rejoinAsked) return;
      const res = await c.request(ApiKey.Heartbeat, c.version(ApiKey.Heartbeat), {
        groupId: this.opts.groupId,
        generationId: this.generation,
        memberId: this.memberId,
        groupInstanceId: null,
      });
      if (res.errorCode !== ErrorCode.NONE) throw new GroupError('Heartbeat', res.errorCode);
      this.partitionsChanged();
    }
  }

  private revoke(): void {
    if (!this.active) return;
    this.active = false;
    this.opts.onRevoked();
  }

  /** A wait that stop(), a rejoin or a failed confirm() cuts short; a wake while none waits is lost (the flags say it). */
  private sleep(ms: number): Promise<void> {
    const cut = new AbortController();
    this.wake = () => cut.abort();
    return this.clock.sleep(ms, cut.signal);
  }
}
