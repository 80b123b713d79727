/** A broker or listener address. */
export interface HostPort {
  host: string;
  port: number;
}

/** Parses HOST:PORT, with IPv6 hosts in brackets ([::1]:9092). */
export function parseHostPort(raw: string): HostPort {
  const s = raw.trim();
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(s) ?? /^([^:\s]+):(\d+)$/.exec(s);
  if (!m) throw new Error(`expected HOST:PORT (IPv6 as [HOST]:PORT)`);
  const port = Number(m[2]);
  if (port > 65535) throw new Error(`port ${port} is above 65535`);
  return { host: m[1]!, port };
}

export function parseHostPortList(raw: string): HostPort[] {
  const parts = raw
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (parts.length === 0) throw new Error('expected at least one HOST:PORT');
  return parts.map(parseHostPort);
}

/** Whether only this machine (this pod) can reach an address bound on the host: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127(\.\d{1,3}){3}$/.test(h);
}

/** An address to connect to for one bound on it: a wildcard (every interface) is reached on loopback. */
export function connectableHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '::1';
  return host;
}
