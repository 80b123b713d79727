/**
 * `--help` of the benchmarks that take parseArgs options: one line per flag with what it does
 * and its default, then exit.
 */
export function printHelpAndExit<K extends string>(
  usage: string,
  options: Record<K, { type: string; default?: string | boolean }>,
  help: Record<K, string>,
): never {
  const flag = (k: K) => {
    const o = options[k];
    return `  --${k.padEnd(20)} ${help[k]}${o.type === 'string' && o.default !== undefined ? ` (default ${o.default})` : ''}`;
  };
  process.stdout.write([usage, ...(Object.keys(options) as K[]).map(flag)].join('\n') + '\n');
  process.exit(0);
}
