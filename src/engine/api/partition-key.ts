/** One partition of a topic as a map key: the partition first, so that keys of a topic's partitions differ early. */
export const partitionKey = (topic: string, partition: number): string => `${partition}\u0000${topic}`;
