import assert from 'node:assert/strict';
import { pollUntil } from '../../processes.js';
import type { OperationCheck } from './operation.js';

const CREATE = { 'cleanup.policy': 'compact' };
const ALTER = { 'delete.retention.ms': '1000' };

export const configs: OperationCheck = {
  op: 'configs',
  title: 'admin configs',
  checks:
    'the admin client creates a topic with cleanup.policy=compact and reads it back with DescribeConfigs, then sets ' +
    'delete.retention.ms=1000 (IncrementalAlterConfigs, or AlterConfigs with the whole set where that is all the ' +
    'client has) and reads both back; kcompact answers another client the same and compacts the topic with the new value.',
  async run(h, client, name) {
    const topic = name;
    const run = await client.configs!(h.bootstrap, { topic, partitions: 1, create: CREATE, alter: ALTER });
    assert.equal(run.created['cleanup.policy'], 'compact', 'DescribeConfigs after CreateTopics');
    const both = { ...CREATE, ...ALTER };
    assert.deepEqual(run.altered, both, `DescribeConfigs after ${run.api}`);
    assert.deepEqual(await h.describe(topic, Object.keys(both)), both, 'DescribeConfigs from another client');
    await pollUntil(`kcompact compacting ${topic} with delete.retention.ms 1000`, 10_000, async () =>
      h.policy(topic)?.compact && h.policy(topic)?.deleteRetentionMs === 1000 ? true : undefined,
    );
  },
};
