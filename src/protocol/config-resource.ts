/** Kafka's ConfigResource.Type codes, as DescribeConfigs, AlterConfigs and IncrementalAlterConfigs carry them. */
export const ConfigResourceType = {
  TOPIC: 2,
  BROKER: 4,
  BROKER_LOGGER: 8,
} as const;
