/**
 * The test bed of real peers, for integration tests: upstreams (Kafka 4.4, kfake), CLI tools and
 * clients, all on loopback. See test/peers/README.md.
 */
export { freePort, freePorts } from './ports.js';
export {
  startKafka,
  kafkaServerProperties,
  DEFAULT_RETENTION_CAP_MS,
  RETENTION_CAP_PROPERTY,
  type KafkaOptions,
  type KafkaCompaction,
  type RunningKafka,
} from './kafka.js';
export { startKfake, type KfakeOptions, type KfakeBroker, type RunningKfake } from './kfake.js';
export { javaTool, javaToolOk, javaArgs, jvmArgs, javaBin, KAFKA_MAIN_CLASSES, type KafkaTool, type JavaToolResult } from './java.js';
export {
  franzclient,
  python,
  kcat,
  franzProduce,
  franzConsume,
  ckProduce,
  ckConsume,
  ckTxn,
  kcatMetadata,
  kcatConsume,
  type TxnSpec,
  type KcatMetadata,
} from './runners.js';
export { kafkajsProduce, kafkajsConsume } from './kafkajs-client.js';
export { startSchemaRegistry, registryMissing, type RunningSchemaRegistry } from './registry.js';
export { startUncompactedUpstream, ecosystemUpstreams, type UpstreamKind, type UncompactedUpstream } from './uncompacted-upstream.js';
export { startConnectWorker, type ConnectWorkerOptions, type RunningConnectWorker, type RestAnswer } from './connect.js';
export { startStreamsApp, type StreamsAppOptions, type StreamsEvent, type RunningStreamsApp } from './streams-app.js';
export { readTopics, readToEnd, allRecords, compactedView, type TopicRecord, type TopicContents } from './read-to-end.js';
export { missingPeers, requirePeers, TEST_BED, type Peer } from './peers.js';
export {
  runProcess,
  startBackground,
  makeTempDir,
  pollUntil,
  tail,
  type RunOptions,
  type RunResult,
  type BackgroundProcess,
  type BackgroundOptions,
  type TempDir,
} from './processes.js';
export {
  genRecord,
  summarize,
  comparable,
  produceFlags,
  consumeFlags,
  generatorFlags,
  type Compression,
  type ProduceSpec,
  type ConsumeSpec,
  type ProduceSummary,
  type ConsumeSummary,
  type PartitionRecords,
  type RecordView,
  type ConsumedRecord,
} from './summary.js';
