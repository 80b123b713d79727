/**
 * HTTP to the proxy's management listeners on a connection of its own per request. fetch reuses
 * kept-alive connections, and one the server closes for idleness just as a request goes out fails
 * that request ("fetch failed"), a race a busy machine makes likely.
 */
import http from 'node:http';

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export function httpRequest(
  hostPort: string,
  route: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<HttpAnswer> {
  const at = hostPort.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: hostPort.slice(0, at).replace(/^\[|\]$/g, ''),
        port: Number(hostPort.slice(at + 1)),
        path: route,
        method: opts.method ?? 'GET',
        headers: opts.headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}
