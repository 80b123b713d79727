/**
 * What an admin verb talks to, from the same flags, KCOMPACT_* environment and config file as
 * the proxy it administers: the management endpoint, and for `status`/`inspect` the data
 * directory to read when that endpoint does not answer.
 */
import type { Command } from 'commander';
import { loadConfigFile } from '../../config/file.js';
import { DEFAULT_METRICS_LISTEN, resolveSettings } from '../../config/settings.js';
import { configFileOption, settingOption } from '../setting-options.js';
import { EndpointUnreachable, formatAddress, ManagementClient } from './management-client.js';

export interface AdminOptions {
  config?: string;
  metricsListen?: string;
  dataDir?: string;
  json?: boolean;
}

export interface AdminTarget {
  endpoint: ManagementClient;
  /** Given explicitly (flag, environment or config file): read when the endpoint does not answer. */
  dataDir?: string;
  json: boolean;
}

/** Adds --metrics-listen, --config and --json; with `dataDir`, --data-dir too. */
export function adminOptions(command: Command, opts: { dataDir: boolean }): Command {
  command.addOption(settingOption('metricsListen', { description: 'management endpoint of the running proxy (its --metrics-listen)' })).addOption(configFileOption("the proxy's JSON config file, for its metricsListen and dataDir"));
  if (opts.dataDir) {
    command.addOption(
      settingOption('dataDir', {
        description: "the proxy's data directory, read read-only when its management endpoint does not answer (a stopped proxy)",
        defaultText: null,
      }),
    );
  }
  return command.option('--json', 'print JSON for machines instead of text');
}

export function adminTarget(opts: AdminOptions): AdminTarget {
  const file = loadConfigFile(opts.config);
  // Commander has already put the KCOMPACT_* twins into opts.
  const settings = resolveSettings(['metricsListen', 'dataDir'], { metricsListen: opts.metricsListen, dataDir: opts.dataDir }, {}, file);
  return {
    endpoint: new ManagementClient(settings.metricsListen ?? { ...DEFAULT_METRICS_LISTEN }),
    ...(settings.dataDir !== undefined ? { dataDir: settings.dataDir } : {}),
    json: opts.json === true,
  };
}

/**
 * Asks the endpoint; when it does not answer and a data directory is known, reads that instead
 * (saying so on stderr): `status` and `inspect` of a stopped proxy.
 */
export async function fromProxyOrDataDir<T>(target: AdminTarget, ask: () => Promise<T>, read: (dataDir: string) => T): Promise<T> {
  try {
    return await ask();
  } catch (err) {
    if (!(err instanceof EndpointUnreachable)) throw err;
    if (target.dataDir === undefined) {
      throw new EndpointUnreachable(`${err.message}; to look at a stopped proxy, give its data directory with --data-dir`);
    }
    process.stderr.write(`kcompact: no proxy answers at ${formatAddress(target.endpoint.address)}; reading its data directory ${target.dataDir} read-only\n`);
    return read(target.dataDir);
  }
}
