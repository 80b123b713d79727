/*
 * The plainest relay Node can be: each client connection piped to its own upstream connection
 * and back, nothing parsed. The proxy benchmark runs it as a reference (in its own process, like
 * the proxy): what a Node process costs to relay bytes before it does any Kafka work.
 *
 *   node dist/bench/pipe-relay.js LISTEN_HOST:PORT UPSTREAM_HOST:PORT
 */
import net from 'node:net';
import { parseHostPort } from '../src/common/host-port.js';

const [listenArg, upstreamArg] = process.argv.slice(2);
if (!listenArg || !upstreamArg) {
  process.stderr.write('usage: pipe-relay LISTEN_HOST:PORT UPSTREAM_HOST:PORT\n');
  process.exit(2);
}
const listen = parseHostPort(listenArg);
const upstream = parseHostPort(upstreamArg);

const server = net.createServer((client) => {
  const up = net.connect(upstream);
  client.setNoDelay(true);
  up.setNoDelay(true);
  client.pipe(up).on('error', () => client.destroy());
  up.pipe(client).on('error', () => up.destroy());
  client.on('error', () => up.destroy());
  up.on('error', () => client.destroy());
});
server.listen(listen, () => process.stdout.write(`listening ${listenArg}\n`));
process.on('SIGTERM', () => process.exit(0));
