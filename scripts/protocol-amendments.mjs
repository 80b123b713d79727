// Versions Apache Kafka released after the definitions the generator reads (kafka-definitions.mjs), written
// from the KIPs that define them. gen-protocol.mjs applies an amendment only while the
// definitions stop short of its version, so newer definitions make it a no-op.
export const AMENDMENTS = [
  {
    // Kafka 4.4, KIP-1242: a client names the cluster and node it means to reach, and a broker
    // that is neither answers REBOOTSTRAP_REQUIRED. The response is v4's. Kafka 4.4's clients ask
    // v5 first (franz-go asks v4): without it each of their connections through the proxy pays a
    // second ApiVersions round trip.
    api: 'ApiVersions',
    version: 5,
    request: [
      { name: 'ClusterId', type: 'string', versions: '5+', nullableVersions: '5+', default: 'null' },
      { name: 'NodeId', type: 'int32', versions: '5+', default: '-1' },
    ],
    response: [],
  },
];
