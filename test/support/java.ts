/**
 * Kafka's command-line tools and main classes, run straight from the jar folder that
 * install.sh collects (no Kafka distribution, no shell scripts).
 */
import path from 'node:path';
import { javaClassesDir, kafkaLibDir, log4jConfig } from './paths.js';
import { runProcess, tail, type RunOptions } from './processes.js';

/** Main classes as found in the 4.4.0 jars (ConfigCommand, DumpLogSegments and the console tools moved since 4.2). */
export const KAFKA_MAIN_CLASSES = {
  server: 'kafka.Kafka',
  storage: 'kafka.tools.StorageTool',
  topics: 'org.apache.kafka.tools.TopicCommand',
  configs: 'org.apache.kafka.tools.ConfigCommand',
  'get-offsets': 'org.apache.kafka.tools.GetOffsetShell',
  'console-producer': 'org.apache.kafka.tools.ConsoleProducer',
  'console-consumer': 'org.apache.kafka.tools.consumer.ConsoleConsumer',
  'consumer-groups': 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand',
  'dump-log': 'org.apache.kafka.tools.DumpLogSegments',
  'connect-distributed': 'org.apache.kafka.connect.cli.ConnectDistributed',
} as const;

export type KafkaTool = Exclude<keyof typeof KAFKA_MAIN_CLASSES, 'server' | 'connect-distributed'>;

export function javaBin(): string {
  return process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
}

/**
 * JVM arguments shared by the broker and the tools. Short-lived JVMs start fastest with only the
 * C1 compiler and the JDK's class-data archive; the serial collector suits 2 cores.
 */
export function jvmArgs(heapMb: number): string[] {
  return [
    `-Xmx${heapMb}m`,
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    '-Xshare:auto',
    '-Djava.awt.headless=true',
    `-Dlog4j2.configurationFile=${log4jConfig}`,
    '-cp',
    `${path.join(kafkaLibDir, '*')}${path.delimiter}${javaClassesDir}`,
  ];
}

/** The java argv for a Kafka main class. */
export function javaArgs(mainClass: string, args: readonly string[], heapMb = 256): string[] {
  return [...jvmArgs(heapMb), mainClass, ...args];
}

export interface JavaToolResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * How long a Kafka CLI tool may run unless the caller says: a JVM starting on a busy machine beside
 * Kafka takes tens of seconds before its first request, so the bound is for a tool that hangs.
 */
const JAVA_TOOL_TIMEOUT_MS = 180_000;

/** Runs a Kafka CLI tool to completion; a non-zero exit is returned, not thrown. */
export async function javaTool(tool: KafkaTool, args: readonly string[], opts: RunOptions = {}): Promise<JavaToolResult> {
  const r = await runProcess(javaBin(), javaArgs(KAFKA_MAIN_CLASSES[tool], args), { timeoutMs: JAVA_TOOL_TIMEOUT_MS, ...opts });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

/** Like javaTool, but a non-zero exit throws with the tool's stderr tail. */
export async function javaToolOk(tool: KafkaTool, args: readonly string[], opts: RunOptions = {}): Promise<JavaToolResult> {
  const r = await javaTool(tool, args, opts);
  if (r.code !== 0) throw new Error(`kafka ${tool} ${args.join(' ')} exited ${r.code}; stderr tail:\n${tail(r.stderr)}`);
  return r;
}
