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
import type { Logger } from '../../ops/log.js';
import { ErrorCode, errorName } from '../../protocol/errors.js';
import { ApiKey } from '../../protocol/messages.js';
import type { UpstreamClient } from '../../upstream/client.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import { assignCarriers, type CarriedPartition } from './carrier-assignment.js';
import {
  CARRIER_PROTOCOL_NAME,
  CARRIER_PROTOCOL_TYPE,
  decodeCarrierAssignment,
  decodeCarrierMetadata,
  encodeCarrierAssignment,
  encodeCarrierMetadata,
} from './carrier-protocol.js';

export interface CarrierGroupOptions {
  upstream: UpstreamClusterClient;
  groupId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  /** The partitions that need a carrier now (the leader assigns these). */
  partitions(): CarriedPartition[];
  /** A generation's assignment to this member. */
  onAssigned(generation: number, carried: CarriedPartition[]): void;
  /** This member's assignment no longer holds: stop carrying before anything else. */
  onRevoked(): void;
  log: Logger;
  /** Waits between attempts after a failure. */
  backoffMs?: number;
}

export interface CarrierGroupStatus {
  groupId: string;
  memberId: string;
  generation: number;
  leader: boolean;
  carried: CarriedPartition[];
}

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
  /** Whether that assignment holds now (between SyncGroup and the next revocation). */
  private active = false;
  private coordinator: UpstreamClient | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private rejoinAsked = false;

  constructor(private readonly opts: CarrierGroupOptions) {}

  start(): void {
    this.running ??= this.loop();
  }

  /** Leaves the group (the others take this member's partitions at once) and stops. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.running;
    this.revoke();
    if (this.memberId && this.coordinator && !this.coordinator.closed) {
      const c = this.coordinator;
      await c
        .request(ApiKey.LeaveGroup, c.version(ApiKey.LeaveGroup), {
          groupId: this.opts.groupId,
          memberId: this.memberId,
          members: [{ memberId: this.memberId, reason: 'the replica stops' }],
        })
        .catch((err: unknown) => this.opts.log.debug('leaving the carrier group failed; the coordinator drops this member after its session timeout', { err }));
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
      if (res.errorCode === 0) return true;
      // The loop's own next heartbeat meets the same answer and joins again.
      this.revoke();
      this.wake?.();
      return false;
    } catch {
      return false;
    }
  }

  /** Asks for a new assignment (the partitions that need a carrier changed). */
  rejoin(): void {
    this.rejoinAsked = true;
    this.wake?.();
  }

  status(): CarrierGroupStatus {
    return {
      groupId: this.opts.groupId,
      memberId: this.memberId,
      generation: this.generation,
      leader: this.leader,
      carried: this.active ? [...this.carried] : [],
    };
  }

  private async loop(): Promise<void> {
    const { log } = this.opts;
    while (!this.stopped) {
      try {
        this.coordinator ??= await this.findCoordinator();
        await this.joinAndSync(this.coordinator);
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
        // The coordinator moving or starting (its offsets topic being created) is routine.
        const routine = err instanceof GroupError && COORDINATOR_ERRORS.has(err.code);
        log[routine ? 'debug' : 'warn']('the carrier group failed; joining again', { groupId: this.opts.groupId, err });
        await this.sleep(this.opts.backoffMs ?? 1000);
      }
    }
  }

  private async findCoordinator(): Promise<UpstreamClient> {
    const { upstream, groupId } = this.opts;
    const any = await upstream.any();
    const version = any.version(ApiKey.FindCoordinator);
    const res = await any.request(ApiKey.FindCoordinator, version, version >= 4 ? { keyType: 0, coordinatorKeys: [groupId] } : { key: groupId, keyType: 0 });
    const c = version >= 4 ? res.coordinators?.[0] : { errorCode: res.errorCode ?? 0, nodeId: res.nodeId ?? -1 };
    if (!c) throw new Error('FindCoordinator of the carrier group answered no coordinator');
    if (c.errorCode !== 0) throw new GroupError('FindCoordinator', c.errorCode);
    return upstream.broker(c.nodeId, 'group');
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
    if (joined.errorCode !== 0) throw new GroupError('JoinGroup', joined.errorCode);
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
    if (synced.errorCode !== 0) throw new GroupError('SyncGroup', synced.errorCode);
    this.generation = generation;
    this.carried = decodeCarrierAssignment(synced.assignment);
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
    const assignment = assignCarriers(decoded, this.opts.partitions());
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
      if (res.errorCode !== 0) throw new GroupError('Heartbeat', res.errorCode);
    }
  }

  private revoke(): void {
    if (!this.active) return;
    this.active = false;
    this.opts.onRevoked();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
