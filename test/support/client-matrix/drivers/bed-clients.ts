/** franz-go, librdkafka through confluent-kafka, and kafka-python: the bed's command-line clients. */
import path from 'node:path';
import { binDir, pythonScriptsDir, venvPython } from '../../paths.js';
import { runProcess, tail } from '../../processes.js';
import type { ClientDriver } from '../types.js';
import { bedCliDriver } from './bed-cli.js';

async function stdoutOf(command: string, args: readonly string[]): Promise<string> {
  const r = await runProcess(command, args, { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${r.code}; stderr tail:\n${tail(r.stderr)}`);
  return r.stdout.trim();
}

const franzclient = path.join(binDir, 'franzclient');

export const franzGo: ClientDriver = bedCliDriver({
  id: 'franz-go',
  name: 'franz-go (kgo)',
  argv: (args) => [franzclient, [...args]],
  share: true,
  version: async () => (JSON.parse(await stdoutOf(franzclient, ['version'])) as { franzGo: string }).franzGo.replace(/^v/, ''),
});

export const confluentKafka: ClientDriver = bedCliDriver({
  id: 'librdkafka',
  name: 'librdkafka (Python confluent-kafka)',
  argv: (args) => [venvPython, [path.join(pythonScriptsDir, 'ck.py'), ...args]],
  share: true,
  version: async () => {
    const [py, lib] = JSON.parse(
      await stdoutOf(venvPython, ['-c', 'import json, confluent_kafka as c; print(json.dumps([c.__version__, c.libversion()[0]]))']),
    ) as [string, string];
    return `${lib} (confluent-kafka ${py})`;
  },
});

export const kafkaPython: ClientDriver = bedCliDriver({
  id: 'kafka-python',
  name: 'kafka-python',
  argv: (args) => [venvPython, [path.join(pythonScriptsDir, 'kp.py'), ...args]],
  share: { unsupported: 'kafka-python has no share consumer (KIP-932).' },
  version: () => stdoutOf(venvPython, ['-c', 'import kafka; print(kafka.__version__)']),
});
