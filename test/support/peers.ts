/**
 * Whether test/peers/install.sh has run here: the one check integration tests make before they
 * use a peer, so unit-only runs skip them with a reason. Under CI (CI set) a missing peer is an
 * error instead: CI always installs the bed, and a silent skip there would hide a broken install.
 *
 * requirePeers has two forms, with that one policy:
 *   if (!requirePeers(t)) return;      in a test: skips it (or throws under CI)
 *   const skip = requirePeers();       in a file whose hooks start peers: `{ skip }` for its tests,
 *                                      and `if (skip) return;` in its hooks (throws under CI)
 * Both check the whole bed (TEST_BED) unless given the peers a test needs.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { apicurioCompleteMarker, binDir, javaClassesDir, kafkaCompleteMarker, venvPython } from './paths.js';
import { javaBin } from './java.js';

/** Something a test can need: the parts install.sh builds, and the Debian tools it installs. */
export type Peer =
  'Kafka jars' | 'java programs' | 'java' | 'kfake' | 'franzclient' | 'kbench' | 'kworkload' | 'helm' | 'python venv' | 'schema registry' | 'kcat' | 'openssl';

/** What most integration tests use, and what requirePeers checks unless told otherwise. */
export const TEST_BED: readonly Peer[] = ['Kafka jars', 'java programs', 'java', 'kfake', 'franzclient', 'python venv'];

function onPath(command: string, versionFlag: string): boolean {
  try {
    execFileSync(command, [versionFlag], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

const CHECKS: Record<Peer, () => boolean> = {
  'Kafka jars': () => fs.existsSync(kafkaCompleteMarker),
  'java programs': () => fs.existsSync(path.join(javaClassesDir, '.complete')),
  java: () => onPath(javaBin(), '-version'),
  kfake: () => fs.existsSync(path.join(binDir, 'kfake')),
  franzclient: () => fs.existsSync(path.join(binDir, 'franzclient')),
  kbench: () => fs.existsSync(path.join(binDir, 'kbench')),
  kworkload: () => fs.existsSync(path.join(binDir, 'kworkload')),
  helm: () => fs.existsSync(path.join(binDir, 'helm')),
  'python venv': () => fs.existsSync(venvPython),
  'schema registry': () => fs.existsSync(apicurioCompleteMarker),
  kcat: () => onPath('kcat', '-V'),
  openssl: () => onPath('openssl', 'version'),
};

/** Each peer is looked for once a process: the bed does not change while tests run. */
const present = new Map<Peer, boolean>();

function has(peer: Peer): boolean {
  let found = present.get(peer);
  if (found === undefined) present.set(peer, (found = CHECKS[peer]()));
  return found;
}

/** Which of `needs` are missing here (empty when all are there). */
export function missingPeers(needs: readonly Peer[] = TEST_BED): Peer[] {
  return needs.filter((peer) => !has(peer));
}

/** Peers install.sh may fail to install without failing: their tests skip even under CI. */
const OPTIONAL: ReadonlySet<Peer> = new Set(['kcat']);

/**
 * In a test: whether `needs` are installed; when not, skips `t` with the reason and returns false.
 * Throws instead under CI (but for OPTIONAL peers).
 */
export function requirePeers(t: TestContext, needs?: readonly Peer[]): boolean;
/**
 * At a file's top level: false when `needs` are installed, else the reason, for `{ skip }` and
 * for hooks to return early on. Throws instead under CI, failing the file.
 */
export function requirePeers(needs?: readonly Peer[]): string | false;
export function requirePeers(first?: TestContext | readonly Peer[], second?: readonly Peer[]): boolean | string | false {
  const t = first === undefined || Array.isArray(first) ? undefined : (first as TestContext);
  const needs = t ? second : (first as readonly Peer[] | undefined);
  const missing = missingPeers(needs);
  if (missing.length === 0) return t ? true : false;
  const reason = `test peers not installed (${missing.join(', ')}): run bash test/peers/install.sh`;
  // kcat comes from Debian's packages, which install.sh may not reach: its tests skip, as it warns.
  if (process.env.CI && missing.some((peer) => !OPTIONAL.has(peer))) throw new Error(reason);
  if (!t) return reason;
  t.skip(reason);
  return false;
}
