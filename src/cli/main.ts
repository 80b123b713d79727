#!/usr/bin/env node
/**
 * `kcompact` command line. Every proxy flag comes from the settings table, so flags, KCOMPACT_*
 * environment variables and config-file keys stay one list.
 */
import { Command, Option } from 'commander';
import { SETTINGS, envOf, flagOf, resolveConfig, ConfigError } from '../config/settings.js';
import { loadConfigFile } from '../config/file.js';
import { runProxy } from './run-proxy.js';

const program = new Command('kcompact')
  .description('Kafka wire-protocol proxy that adds log compaction to Kafka-protocol stores that lack it')
  .showHelpAfterError();

const proxy = program.command('proxy').description('run the proxy in front of an upstream store');
proxy.addOption(new Option('-c, --config <FILE>', 'JSON config file whose keys are the camelCase setting names').env('KCOMPACT_CONFIG'));
for (const s of SETTINGS) {
  const help = s.defaultText ? `${s.description} (default: ${s.defaultText})` : s.description;
  proxy.addOption(new Option(`--${flagOf(s.key)} <${s.arg}>`, help).env(envOf(s.key)));
}
proxy.action(async (opts: Record<string, unknown>) => {
  try {
    const config = resolveConfig(opts, {}, loadConfigFile(opts.config as string | undefined));
    await runProxy(config);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`kcompact: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
});

await program.parseAsync(process.argv);
