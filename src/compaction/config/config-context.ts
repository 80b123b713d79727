/** What the config-layer filters share. */
import type { Logger } from '../../common/log.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import type { BrokerDefaults } from './broker-defaults.js';
import type { ConfigSync } from './config-sync.js';
import type { StoreSegmentsKeeper } from './store-segments.js';
import type { TopicConfigState } from './topic-config-state.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';

export interface ConfigContext {
  state: TopicConfigState;
  sync: ConfigSync;
  links: UpstreamClusterClient;
  defaults: BrokerDefaults;
  topicIds: TopicIds;
  log: Logger;
  requestTimeoutMs: number;
  /** How survivors are carried where the store caps retention: what a compact-only topic on such a store must allow. */
  carrying: CarryingRule;
  /**
   * Sets the store's segments of compact-only topics (store-segments.ts), on a replica that
   * carries; a request that changed a topic's configs waits for it before it is answered.
   */
  storeSegments?: StoreSegmentsKeeper;
}

export interface CarryingRule {
  /** Share of the store's retention at which records are carried again. */
  share: number;
  /** The cleaner's pause between rounds. */
  backoffMs: number;
  /** carryBytesPerSecond where this replica carries; 0 or absent: unbounded. */
  bytesPerSecond?: number;
}
