/**
 * The stores without compaction that tests run kcompact in front of: Apache Kafka 4.4 with its
 * cleaner off, or franz-go's kfake (an independent implementation) with three brokers.
 */
import { startKafka } from './kafka.js';
import { startKfake } from './kfake.js';

export type UpstreamKind = 'kafka' | 'kfake';

export interface UncompactedUpstream {
  kind: UpstreamKind;
  bootstrap: string;
  stop(): Promise<void>;
}

export async function startUncompactedUpstream(kind: UpstreamKind): Promise<UncompactedUpstream> {
  const running = kind === 'kafka' ? await startKafka({ compaction: 'off' }) : await startKfake({ brokers: 3 });
  return { kind, bootstrap: running.bootstrap, stop: () => running.stop() };
}

/**
 * The upstreams the ecosystem tests (Connect, Streams) run against: Kafka by default, the most
 * realistic store; KCOMPACT_ECOSYSTEM_UPSTREAMS=kafka,kfake adds kfake (each costs its run time).
 */
export function ecosystemUpstreams(): UpstreamKind[] {
  const listed = (process.env.KCOMPACT_ECOSYSTEM_UPSTREAMS ?? 'kafka')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const kind of listed) {
    if (kind !== 'kafka' && kind !== 'kfake')
      throw new Error(`KCOMPACT_ECOSYSTEM_UPSTREAMS: unknown upstream ${kind}; use kafka, kfake or both, comma-separated`);
  }
  return listed as UpstreamKind[];
}
