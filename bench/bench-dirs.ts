/**
 * Where a benchmark with brokers and proxy processes puts things: Kafka's logs under
 * $KCOMPACT_BENCH_TMPDIR (default /dev/shm when it exists, as fast as a page cache), the proxies'
 * data directories under --index-dir (default the system temp dir, as a pod's emptyDir would
 * be), and with --cpu-prof one directory of CPU profiles per named proxy.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface BenchDirs {
  /** Parent of the proxies' data directories. */
  indexDir: string;
  /** Where Kafka's logs go (TMPDIR is set to it), undefined for the default temp dir. */
  tmp: string | undefined;
  /** --cpu-prof, resolved. */
  cpuProf: string | undefined;
  /** A fresh (emptied) directory for the CPU profiles of `name`, or undefined without --cpu-prof. */
  profDir(name: string): string | undefined;
}

export function benchDirs(args: { 'index-dir'?: string; 'cpu-prof'?: string }): BenchDirs {
  const indexDir = path.resolve(args['index-dir'] ?? os.tmpdir());
  const tmp = process.env.KCOMPACT_BENCH_TMPDIR ?? (fs.existsSync('/dev/shm') ? '/dev/shm' : undefined);
  // startKafka places its dirs under os.tmpdir(), which follows TMPDIR.
  if (tmp) process.env.TMPDIR = tmp;
  const cpuProf = args['cpu-prof'] ? path.resolve(args['cpu-prof']) : undefined;
  const profDir = (name: string) => {
    if (!cpuProf) return undefined;
    const dir = path.join(cpuProf, name);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  };
  return { indexDir, tmp, cpuProf, profDir };
}
