/**
 * What an admin verb talks to, from the same flags, KCOMPACT_* environment and config file as
 * the proxy it administers: the admin listener and its token file, and for `status`/`inspect` the
 * data directory to read when that listener does not answer.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import { loadConfigFile } from '../../config/file.js';
import { ConfigError, DEFAULT_ADMIN_LISTEN, describeKey, resolveSettings } from '../../config/settings.js';
import { tokenOf } from '../../ops/bearer-token.js';
import { configFileOption, settingOption } from '../setting-options.js';
import { AdminClient, EndpointUnreachable, formatAddress, type AdminCredentials } from './admin-client.js';

export interface AdminOptions {
  config?: string;
  adminListen?: string;
  adminTokenFile?: string;
  dataDir?: string;
  json?: boolean;
}

export interface AdminTarget {
  endpoint: AdminClient;
  /** Given explicitly (flag, environment or config file): read when the endpoint does not answer. */
  dataDir?: string;
  json: boolean;
}

/** Adds --admin-listen, --admin-token-file, --config and --json; with `dataDir`, --data-dir too. */
export function adminOptions(command: Command, opts: { dataDir: boolean }): Command {
  command
    .addOption(settingOption('adminListen', { description: 'admin listener of the running proxy (its --admin-listen)' }))
    .addOption(
      settingOption('adminTokenFile', {
        description: "the proxy's admin token file (its --admin-token-file), when its admin listener requires a token",
        defaultText: 'none',
      }),
    )
    .addOption(configFileOption("the proxy's JSON config file, for its adminListen, adminTokenFile and dataDir"));
  if (opts.dataDir) {
    command.addOption(
      settingOption('dataDir', {
        description: "the proxy's data directory, read read-only when its admin listener does not answer (a stopped proxy)",
        defaultText: null,
      }),
    );
  }
  return command.option('--json', 'print JSON for machines instead of text');
}

function credentials(file: string | undefined): AdminCredentials | undefined {
  if (file === undefined) return undefined;
  try {
    return { token: tokenOf(fs.readFileSync(file)), file };
  } catch (err) {
    throw new ConfigError(`${describeKey('adminTokenFile')}: ${file}: ${(err as Error).message}`);
  }
}

export function adminTarget(opts: AdminOptions): AdminTarget {
  const file = loadConfigFile(opts.config);
  // Commander has already put the KCOMPACT_* twins into opts.
  const settings = resolveSettings(
    ['adminListen', 'adminTokenFile', 'dataDir'],
    { adminListen: opts.adminListen, adminTokenFile: opts.adminTokenFile, dataDir: opts.dataDir },
    {},
    file,
  );
  return {
    endpoint: new AdminClient(settings.adminListen ?? { ...DEFAULT_ADMIN_LISTEN }, credentials(settings.adminTokenFile)),
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
