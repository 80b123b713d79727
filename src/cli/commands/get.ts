/**
 * `kcompact get TOPIC KEY`: a compacted topic's latest value of a key, from the running proxy's
 * table API (docs/tables.md). The value is written to stdout as its bytes; --json prints the
 * whole record. Exit 1 when the key has no value.
 */
import type { Command } from 'commander';
import { CliError, EXIT_USAGE } from './cli-error.js';
import { printJson } from './render.js';
import { keyPath, partitionOption, tablesClient, tablesOptions, type TablesOptions } from './tables-target.js';

interface GetOptions extends TablesOptions {
  minOffset?: string;
}

export function addGetCommand(program: Command): void {
  const command = program
    .command('get')
    .description("print a compacted topic's latest value of a key, from the running proxy's table API")
    .argument('<topic>', 'the compacted topic')
    .argument('<key>', 'the key, as UTF-8 text')
    .option('--min-offset <OFFSET>', 'wait until the index has read this offset (the one a put printed): read-your-writes');
  tablesOptions(command).action(async (topic: string, key: string, opts: GetOptions) => {
    const client = tablesClient(opts);
    if (opts.minOffset !== undefined && !/^\d+$/.test(opts.minOffset)) throw new CliError(`--min-offset ${opts.minOffset} is not an offset`, EXIT_USAGE);
    const partition = partitionOption(opts.partition);
    // Text for --json, as people read it; base64 otherwise, so that any value's bytes come out as they are.
    const segment = opts.json ? key : Buffer.from(key).toString('base64');
    const encoding = opts.json ? undefined : 'base64';
    const answer = await client.request('GET', keyPath(topic, segment, { partition, min_offset: opts.minOffset, encoding }));
    if (answer.status === 404 && typeof answer.body.partition === 'number') {
      throw new CliError(`${topic} has no value for key ${JSON.stringify(key)} (partition ${answer.body.partition})`);
    }
    if (answer.status !== 200) throw client.refusal(answer);
    if (opts.json) {
      printJson(answer.body);
      return;
    }
    const value = answer.body.value;
    process.stdout.write(Buffer.from(typeof value === 'string' ? value : '', 'base64'));
  });
}
