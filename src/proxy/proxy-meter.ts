/**
 * The proxy's traffic figures. Connections update plain numbers on the hot path (prom-client's
 * counters hash their labels on every increment); the registry reads them when scraped. Only the
 * latency histogram is updated per response, through a labelled child cached per API.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { apiName } from '../protocol/messages.js';

/**
 * connect: a connection to an upstream broker could not be made (refused, timed out);
 * disconnect: the upstream closed or reset a connection a client was using;
 * protocol: the upstream sent a frame the proxy could not accept (bad size, unexpected
 * correlation id);
 * discovery: learning the upstream's brokers (Metadata on the proxy's own connection) failed.
 */
export const UPSTREAM_ERROR_KINDS = ['connect', 'disconnect', 'protocol', 'discovery'] as const;
export type UpstreamErrorKind = (typeof UPSTREAM_ERROR_KINDS)[number];

/** Kafka requests take from well under a millisecond (metadata) to a long-poll's max wait. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** One API's figures, fetched once per request by api key. */
export class ApiMeter {
  requests = 0;
  errors = 0;

  constructor(
    readonly api: string,
    /** Records a request's time from arrival to its response's last byte handed to the client. */
    readonly observe: (seconds: number) => void,
  ) {}
}

export class ProxyMeter {
  bytesFromClients = 0;
  bytesToClients = 0;
  bytesFromUpstream = 0;
  bytesToUpstream = 0;
  connectionsOpen = 0;
  connectionsTotal = 0;
  /** Epoch ms of the last connection made to the upstream (0: none yet); readiness reads it. */
  lastUpstreamConnectMs = 0;
  private readonly upstreamErrors = new Map<UpstreamErrorKind, number>(UPSTREAM_ERROR_KINDS.map((k) => [k, 0]));
  /** By api key; keys without a name share `unknown` so a client cannot mint label values. */
  private readonly apis: ApiMeter[] = [];
  private readonly unknown: ApiMeter;
  private readonly duration: Histogram<'api'>;

  constructor(registry: Registry = new Registry()) {
    const registers = [registry];
    const meter = this;
    this.duration = new Histogram({
      name: 'kcompact_request_duration_seconds',
      help: 'Time from a request arriving to the last byte of its response handed to the client, by Kafka API (requests without a response are not observed)',
      labelNames: ['api'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.unknown = this.meterFor('unknown');
    const apis = (): ApiMeter[] => [...meter.apis.filter(Boolean), meter.unknown];
    const perApi = (name: string, help: string, count: (a: ApiMeter) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['api'],
        registers,
        collect(this: Counter<'api'>) {
          this.reset();
          for (const a of apis()) if (count(a) > 0) this.inc({ api: a.api }, count(a));
        },
      });
    perApi('kcompact_requests_total', 'Requests received from clients, by Kafka API (api="unknown": an api key the proxy has no name for)', (a) => a.requests);
    perApi(
      'kcompact_request_errors_total',
      'Requests that got no response because the proxy closed their connection (upstream failure or disconnect, a frame it could not accept, a failed filter, shutdown past the drain deadline), by Kafka API. Error codes inside responses are not counted',
      (a) => a.errors,
    );
    const bytes = (name: string, help: string, client: () => number, upstream: () => number) =>
      new Counter({
        name,
        help,
        labelNames: ['peer'],
        registers,
        collect(this: Counter<'peer'>) {
          this.reset();
          this.inc({ peer: 'client' }, client());
          this.inc({ peer: 'upstream' }, upstream());
        },
      });
    bytes(
      'kcompact_bytes_received_total',
      'Bytes read from client connections (peer="client") and from upstream connections (peer="upstream")',
      () => meter.bytesFromClients,
      () => meter.bytesFromUpstream,
    );
    bytes(
      'kcompact_bytes_sent_total',
      'Bytes written to client connections (peer="client") and to upstream connections (peer="upstream")',
      () => meter.bytesToClients,
      () => meter.bytesToUpstream,
    );
    new Gauge({
      name: 'kcompact_connections',
      help: 'Client connections open now',
      registers,
      collect(this: Gauge) {
        this.set(meter.connectionsOpen);
      },
    });
    new Counter({
      name: 'kcompact_connections_total',
      help: 'Client connections accepted',
      registers,
      collect(this: Counter) {
        this.reset();
        this.inc(meter.connectionsTotal);
      },
    });
    new Counter({
      name: 'kcompact_upstream_errors_total',
      help: 'Failures talking to the upstream on client traffic and broker discovery, by kind: connect, disconnect, protocol, discovery',
      labelNames: ['kind'],
      registers,
      collect(this: Counter<'kind'>) {
        this.reset();
        for (const [kind, n] of meter.upstreamErrors) this.inc({ kind }, n);
      },
    });
  }

  api(apiKey: number): ApiMeter {
    return this.apis[apiKey] ?? this.addApi(apiKey);
  }

  upstreamError(kind: UpstreamErrorKind): void {
    this.upstreamErrors.set(kind, this.upstreamErrors.get(kind)! + 1);
  }

  upstreamErrorCount(kind: UpstreamErrorKind): number {
    return this.upstreamErrors.get(kind)!;
  }

  upstreamConnected(): void {
    this.lastUpstreamConnectMs = Date.now();
  }

  private addApi(apiKey: number): ApiMeter {
    const name = apiName(apiKey);
    if (name === undefined) return this.unknown;
    const meter = this.meterFor(name);
    this.apis[apiKey] = meter;
    return meter;
  }

  private meterFor(api: string): ApiMeter {
    const child = this.duration.labels({ api });
    return new ApiMeter(api, (seconds) => child.observe(seconds));
  }
}
