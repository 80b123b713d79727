/**
 * SaslHandshake v0 is refused by closing the connection: after a v0 handshake the SASL tokens
 * travel outside Kafka frames, which no frame reader can follow. ApiVersions still offers v0
 * (librdkafka takes its absence for no SASL at all), but clients since Kafka 1.0 send v1 and
 * SaslAuthenticate when the broker has them.
 */
import { ApiKey } from '../../protocol/messages.js';
import type { Filter } from '../filter/filter.js';

export const saslHandshakeFilter: Filter = {
  name: 'sasl-handshake',
  apis: {
    [ApiKey.SaslHandshake]: {
      maxVersion: 0,
      onRequest: (_req, ctx) =>
        ctx.close(
          'refused SaslHandshake v0',
          new Error(
            'SaslHandshake v0 (SASL tokens outside Kafka frames) does not pass through kcompact; use a client that authenticates with SaslHandshake v1 and SaslAuthenticate (Kafka 1.0 clients and later)',
          ),
        ),
    },
  },
};
