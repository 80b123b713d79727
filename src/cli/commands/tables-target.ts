/**
 * Where `kcompact get` and `put` find the table API: --tables-url, or the proxy's own
 * --tables-listen (flag, KCOMPACT_* environment or config file, as the proxy reads it), and its
 * token file.
 */
import fs from 'node:fs';
import { Option, type Command } from 'commander';
import { connectableHost } from '../../common/host-port.js';
import { loadConfigFile } from '../../config/file.js';
import { ConfigError, describeKey, resolveSettings } from '../../config/settings.js';
import { tokenOf } from '../../ops/bearer-token.js';
import { configFileOption, settingOption } from '../setting-options.js';
import { formatAddress } from './admin-client.js';
import { CliError, EXIT_USAGE } from './cli-error.js';
import { TablesClient } from './tables-client.js';

export interface TablesOptions {
  config?: string;
  tablesUrl?: string;
  tablesListen?: string;
  tablesTokenFile?: string;
  partition?: string;
  json?: boolean;
}

/** Adds --tables-url, --tables-listen, --tables-token-file, --config, --partition and --json. */
export function tablesOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--tables-url <URL>', 'base URL of the table API, e.g. http://10.0.0.5:9646 (default: from --tables-listen)').env('KCOMPACT_TABLES_URL'),
    )
    .addOption(settingOption('tablesListen', { description: "the proxy's table API listener (its --tables-listen)" }))
    .addOption(
      settingOption('tablesTokenFile', {
        description: "the proxy's table API token file (its --tables-token-file), when the listener requires a token",
        defaultText: 'none',
      }),
    )
    .addOption(configFileOption("the proxy's JSON config file, for its tablesListen and tablesTokenFile"))
    .option('--partition <N>', "the key's partition (default: the one producers' default partitioner gives its bytes)")
    .option('--json', 'print the JSON answer');
}

export function tablesClient(opts: TablesOptions): TablesClient {
  const settings = resolveSettings(
    ['tablesListen', 'tablesTokenFile'],
    { tablesListen: opts.tablesListen, tablesTokenFile: opts.tablesTokenFile },
    {},
    loadConfigFile(opts.config),
  );
  let base: URL;
  if (opts.tablesUrl !== undefined) {
    try {
      base = new URL(opts.tablesUrl);
    } catch {
      throw new CliError(`--tables-url ${JSON.stringify(opts.tablesUrl)} is not a URL; give one like http://127.0.0.1:9646`, EXIT_USAGE);
    }
    if (base.protocol !== 'http:') throw new CliError(`--tables-url must be an http:// URL, got ${base.protocol}`, EXIT_USAGE);
  } else if (settings.tablesListen !== undefined) {
    base = new URL(`http://${formatAddress({ host: connectableHost(settings.tablesListen.host), port: settings.tablesListen.port })}`);
  } else {
    throw new CliError(`no table API to talk to: give --tables-url, or ${describeKey('tablesListen')} as the proxy has it`, EXIT_USAGE);
  }
  const file = settings.tablesTokenFile;
  if (file === undefined) return new TablesClient(base);
  try {
    return new TablesClient(base, { token: tokenOf(fs.readFileSync(file)), file });
  } catch (err) {
    throw new ConfigError(`${describeKey('tablesTokenFile')}: ${file}: ${(err as Error).message}`);
  }
}

/** The path and query of a key's route; `key` as the path segment takes it (text, or base64 with encoding=base64). */
export function keyPath(topic: string, key: string, query: Record<string, string | undefined>): string {
  const q = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined));
  const search = q.toString();
  return `/v1/topics/${encodeURIComponent(topic)}/keys/${encodeURIComponent(key)}${search ? `?${search}` : ''}`;
}

export function partitionOption(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new CliError(`--partition ${raw} is not a partition number`, EXIT_USAGE);
  return raw;
}
