/**
 * Reference relays for the proxy benchmark: what relaying bytes costs before any Kafka work, so a
 * throughput ratio can be read against what any proxy on the same machine could reach.
 *
 *   splice-relay  krelay (test/peers/go/cmd/krelay): Go's io.Copy, splice(2), no copy to user space
 *   node-pipe     bench/pipe-relay.ts: a Node process piping sockets, nothing parsed
 *
 * A relay does not rewrite broker addresses, so Kafka gets one more listener per relay that
 * advertises the relay's port: clients that bootstrap through a relay stay on it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { binDir } from '../test/support/paths.js';
import type { ExtraListener } from '../test/support/kafka.js';
import { freePorts, makeTempDir, pollUntil, startBackground, tail } from '../test/support/index.js';
import { canConnect } from './proxy-process.js';

export const RELAYS = ['splice-relay', 'node-pipe'] as const;
export type RelayKind = (typeof RELAYS)[number];

export interface Relay {
  kind: RelayKind;
  bootstrap: string;
  pid: number;
  stop(): Promise<void>;
}

const pipeRelayPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'pipe-relay.js');
const krelayPath = path.join(binDir, 'krelay');

export function krelayMissing(): boolean {
  return !fs.existsSync(krelayPath);
}

/** Kafka listeners for the relays: Kafka listens on `port`, the relay on `advertisedPort`. */
export async function relayListeners(): Promise<Record<RelayKind, ExtraListener>> {
  const [a, b, c, d] = await freePorts(4);
  return {
    'splice-relay': { name: 'SPLICE', port: a!, advertisedPort: b! },
    'node-pipe': { name: 'NODEPIPE', port: c!, advertisedPort: d! },
  };
}

export async function startRelay(kind: RelayKind, listener: ExtraListener): Promise<Relay> {
  const temp = makeTempDir(`kcompact-bench-${kind}-`);
  const listen = `127.0.0.1:${listener.advertisedPort}`;
  const upstream = `127.0.0.1:${listener.port}`;
  const [command, args] =
    kind === 'splice-relay' ? [krelayPath, ['-listen', listen, '-upstream', upstream]] : [process.execPath, [pipeRelayPath, listen, upstream]];
  const stderrFile = path.join(temp.path, 'stderr.log');
  const proc = startBackground(command, args, { stdoutFile: path.join(temp.path, 'stdout.log'), stderrFile });
  const stop = async () => {
    try {
      await proc.stop(5_000);
    } finally {
      temp.remove();
    }
  };
  try {
    await pollUntil(
      `${kind} listening on ${listen}`,
      10_000,
      () => canConnect(listener.advertisedPort),
      () => {
        const s = proc.exitStatus();
        return s ? `${kind} exited (code ${s.code}): ${tail(fs.readFileSync(stderrFile, 'utf8'))}` : undefined;
      },
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { kind, bootstrap: listen, pid: proc.pid, stop };
}
