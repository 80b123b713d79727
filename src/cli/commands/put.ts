/**
 * `kcompact put TOPIC KEY [VALUE|-]`: writes a key's value (or with --delete its tombstone) to a
 * compacted topic through the running proxy's table API, optionally only if the key is still at
 * an offset (--if-match) or has no value (--if-none-match). Prints where it was written. Exit 1
 * when the condition failed, saying the key's current offset.
 */
import type { Command } from 'commander';
import { CliError, EXIT_USAGE } from './cli-error.js';
import { printJson } from './render.js';
import { keyPath, partitionOption, tablesClient, tablesOptions, type TablesOptions } from './tables-target.js';

interface PutOptions extends TablesOptions {
  ifMatch?: string;
  ifNoneMatch?: boolean;
  delete?: boolean;
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The value to write: the argument as UTF-8, stdin for -, none for --delete. */
async function valueOf(value: string | undefined, opts: PutOptions): Promise<Buffer | null> {
  if (opts.delete) {
    if (value !== undefined) throw new CliError('--delete writes a tombstone: give no value', EXIT_USAGE);
    return null;
  }
  if (value === undefined) throw new CliError('give the value, - to read it from stdin, or --delete', EXIT_USAGE);
  return value === '-' ? readStdin() : Buffer.from(value, 'utf8');
}

function conditionHeaders(opts: PutOptions): Record<string, string> {
  if (opts.ifMatch !== undefined && opts.ifNoneMatch) throw new CliError('--if-match and --if-none-match exclude each other', EXIT_USAGE);
  if (opts.ifMatch !== undefined) {
    if (!/^\d+$/.test(opts.ifMatch)) throw new CliError(`--if-match ${opts.ifMatch} is not an offset`, EXIT_USAGE);
    return { 'if-match': opts.ifMatch };
  }
  if (opts.ifNoneMatch) {
    if (opts.delete) throw new CliError('--delete with --if-none-match would delete a key that has no value', EXIT_USAGE);
    return { 'if-none-match': '*' };
  }
  return {};
}

export function addPutCommand(program: Command): void {
  const command = program
    .command('put')
    .description("write a key's value to a compacted topic through the running proxy's table API")
    .argument('<topic>', 'the compacted topic')
    .argument('<key>', 'the key, as UTF-8 text')
    .argument('[value]', 'the value, as UTF-8 text; - reads its bytes from stdin')
    .option('--if-match <OFFSET>', 'write only if the key is still at this offset (what a get --json or a put printed)')
    .option('--if-none-match', 'write only if the key has no value')
    .option('--delete', "write the key's tombstone instead of a value");
  tablesOptions(command).action(async (topic: string, key: string, value: string | undefined, opts: PutOptions) => {
    const headers = conditionHeaders(opts);
    const partition = partitionOption(opts.partition);
    const body = await valueOf(value, opts);
    const client = tablesClient(opts);
    const answer = await client.request(opts.delete ? 'DELETE' : 'PUT', keyPath(topic, key, { partition }), { headers, ...(body && { body }) });
    if (answer.status === 412) {
      const current = answer.body.current;
      throw new CliError(
        `precondition failed: ${topic} key ${JSON.stringify(key)} ` +
          (current === null ? 'has no value' : typeof current === 'number' ? `is at offset ${current}` : 'has moved on') +
          `; the write (offset ${String(answer.body.offset)}) is void. Read the key again and retry` +
          (typeof current === 'number' ? ` with --if-match ${current}` : ''),
      );
    }
    if (answer.status !== 200) throw client.refusal(answer);
    if (opts.json) printJson(answer.body);
    else process.stdout.write(`${opts.delete ? 'deleted' : 'written'}: ${topic}-${String(answer.body.partition)} at offset ${String(answer.body.offset)}\n`);
  });
}
