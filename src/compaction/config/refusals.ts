/** kcompact's own refusals in the config APIs (Kafka's messages live next to the checks that make them). */
import { ErrorCode } from '../../protocol/errors.js';
import { CONFIGS_TOPIC } from './configs-topic.js';

export interface Refusal {
  errorCode: number;
  errorMessage: string | null;
}

export function storeUnavailable(topic: string, reason: string): Refusal {
  return {
    errorCode: ErrorCode.POLICY_VIOLATION,
    errorMessage: `kcompact cannot keep topic configs in the upstream (${reason}); list ${topic} among kcompact's static topics instead`,
  };
}

export function staticTopic(topic: string): Refusal {
  if (topic === CONFIGS_TOPIC) return configsTopicKept();
  return {
    errorCode: ErrorCode.POLICY_VIOLATION,
    errorMessage: `topic ${topic} takes its compaction configs from kcompact's static topic configuration; change them there`,
  };
}

export function storeFailed(topic: string, err: unknown, consequence: string): Refusal {
  return {
    errorCode: ErrorCode.UNKNOWN_SERVER_ERROR,
    errorMessage: `kcompact could not store the configs of topic ${topic} in ${CONFIGS_TOPIC} (${(err as Error).message ?? err}); ${consequence}`,
  };
}

/** The upstream topic that holds every topic's configs: deleting it would turn compaction off. */
export function configsTopicKept(): Refusal {
  return {
    errorCode: ErrorCode.POLICY_VIOLATION,
    errorMessage: `${CONFIGS_TOPIC} holds kcompact's topic configs and is neither changed nor deleted through kcompact; delete it on the upstream directly once no kcompact uses it`,
  };
}
