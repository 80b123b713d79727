/** `kcompact proxy`: runs the proxy; every setting is a flag, a KCOMPACT_* variable and a config-file key. */
import type { Command } from 'commander';
import { loadConfigFile } from '../../config/file.js';
import { resolveConfig, SETTING_KEYS } from '../../config/settings.js';
import { runProxy } from '../run-proxy.js';
import { configFileOption, settingOption } from '../setting-options.js';

export function addProxyCommand(program: Command): void {
  const proxy = program
    .command('proxy')
    .description('run the proxy in front of an upstream store')
    .addOption(configFileOption())
    .addHelpText(
      'after',
      '\nEach setting is a flag, a KCOMPACT_* environment variable and a config-file key; the command line wins over the\n' +
        'environment, which wins over the config file, which wins over the default. Invalid values stop the start with\n' +
        'exit code 2 and a message naming the setting. config/README.md explains every setting; config/examples/ has a\n' +
        'configuration per kind of upstream.',
    );
  for (const key of SETTING_KEYS) proxy.addOption(settingOption(key));
  proxy.action(async (opts: Record<string, unknown>) => {
    // Commander has already put the KCOMPACT_* twins into opts.
    await runProxy(resolveConfig(opts, {}, loadConfigFile(opts.config as string | undefined)));
  });
}
