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

program
  .command('compact')
  .description('clean now: every compacted topic, or the one named, on the running proxy')
  .argument('[topic]', 'the topic to clean')
  .addOption(new Option('--metrics-listen <HOST:PORT>', 'management endpoint of the running proxy (default: 127.0.0.1:9644)').env(envOf('metricsListen')))
  .action(async (topic: string | undefined, opts: { metricsListen?: string }) => {
    const target = opts.metricsListen ?? '127.0.0.1:9644';
    const url = new URL(`http://${target}/compact`);
    if (topic) url.searchParams.set('topic', topic);
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST' });
    } catch (err) {
      process.stderr.write(`kcompact: cannot reach the proxy's management endpoint at ${target}: ${(err as Error).message}; is the proxy running, and is --metrics-listen right?\n`);
      process.exit(1);
    }
    const text = await res.text();
    process.stdout.write(text);
    if (!res.ok) process.exit(1);
  });

await program.parseAsync(process.argv);
