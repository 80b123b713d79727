/** Topics as the integration tests create them. */
import type { Admin } from 'kafkajs';

/**
 * Creates a `cleanup.policy=compact` topic with `configs` beside it (segment.ms and the like)
 * through `admin`, and waits for its leaders.
 */
export async function createCompactedTopic(admin: Admin, topic: string, configs: Record<string, string>, partitions = 1): Promise<void> {
  await admin.createTopics({
    waitForLeaders: true,
    topics: [
      {
        topic,
        numPartitions: partitions,
        configEntries: Object.entries({ 'cleanup.policy': 'compact', ...configs }).map(([name, value]) => ({ name, value })),
      },
    ],
  });
}
