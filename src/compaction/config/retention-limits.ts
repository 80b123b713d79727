/**
 * The retention limits kcompact asks the store for on a compact-only topic (retention.ms=-1,
 * retention.bytes=-1), and how it tells a store's refusal of them.
 */
import { RETENTION_BYTES, RETENTION_MS } from './definitions.js';

/** Whether the store's refusal was of the retention asked for (the store names it in its message). */
export function refusedRetention(errorMessage: string | null | undefined): boolean {
  return /retention/i.test(errorMessage ?? '');
}

/** Whether a config is one of the retention limits kcompact sets upstream for a compact-only topic. */
export function isRetentionLimit(name: string): boolean {
  return name === RETENTION_MS || name === RETENTION_BYTES;
}

/** What kcompact asked the upstream for, and what the upstream said, for a client refused anyway. */
export function retentionRefused(topic: string, upstreamMessage: string | null | undefined): string {
  return (
    `kcompact gives topic ${topic} retention.ms=-1 and retention.bytes=-1 upstream because its cleanup.policy lacks delete ` +
    `(the latest value of every key must be kept), and the upstream refused: ${upstreamMessage ?? ''}`
  );
}
