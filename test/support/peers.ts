/**
 * Whether test/peers/install.sh has run here, so unit-only runs skip integration tests with a
 * reason. Under CI (CI set) a missing peer is an error instead: CI always installs the bed, and a
 * silent skip there would hide a broken install.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { binDir, javaClassesDir, kafkaCompleteMarker, venvPython } from './paths.js';
import { javaBin } from './java.js';

function onPath(command: string, versionFlag: string): boolean {
  try {
    execFileSync(command, [versionFlag], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** What the bed lacks here (empty when complete); kcat is optional and listed by kcatAvailable. */
export function missingPeers(): string[] {
  const missing: string[] = [];
  if (!fs.existsSync(kafkaCompleteMarker)) missing.push('Kafka jars');
  if (!fs.existsSync(path.join(javaClassesDir, '.complete'))) missing.push('java programs');
  if (!onPath(javaBin(), '-version')) missing.push('java');
  for (const b of ['kfake', 'franzclient']) if (!fs.existsSync(path.join(binDir, b))) missing.push(b);
  if (!fs.existsSync(venvPython)) missing.push('python venv');
  return missing;
}

export function peersAvailable(): boolean {
  return missingPeers().length === 0;
}

let kcatPresent: boolean | undefined;

/** kcat comes from Debian and may be unavailable; tests that need it skip. */
export function kcatAvailable(): boolean {
  kcatPresent ??= onPath('kcat', '-V');
  return kcatPresent;
}

/** Skips `t` (and returns false) when the bed is not installed; throws under CI. */
export function requirePeers(t: TestContext): boolean {
  const missing = missingPeers();
  if (missing.length === 0) return true;
  const reason = `test peers not installed (${missing.join(', ')}): run bash test/peers/install.sh`;
  if (process.env.CI) throw new Error(reason);
  t.skip(reason);
  return false;
}
