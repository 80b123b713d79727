/**
 * ApiVersions: a request newer than the proxy can read gets Kafka's answer to a too-new
 * ApiVersions (a v0 body naming the versions it does speak, so the client retries with one of
 * them), and the upstream's answer is clamped to what the chain can decode (api-versions.ts).
 * An upstream answer that does not decode cannot be clamped, so it is not passed on: the client
 * gets the same answer naming v0, which every store answers, and asks again (librdkafka's mock
 * cluster, asked above the v2 it speaks, answers so; kcompact's own client falls back the same way).
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ApiKey, apiSchema, encodeResponseFrame, type ApiVersionsResponse } from '../../protocol/messages.js';
import { clampApiVersions } from '../api-versions.js';
import type { Filter } from '../filter/filter.js';

const MAX_VERSION = apiSchema(ApiKey.ApiVersions)!.maxVersion;

/** Kafka's answer to an ApiVersions version it does not speak: a v0 body naming those it does, up to `maxVersion`. */
function unsupported(correlationId: number, maxVersion: number): Buffer {
  return encodeResponseFrame(ApiKey.ApiVersions, 0, correlationId, {
    errorCode: ErrorCode.UNSUPPORTED_VERSION,
    apiKeys: [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion }],
  });
}

export const apiVersionsFilter: Filter = {
  name: 'api-versions',
  apis: {
    [ApiKey.ApiVersions]: {
      onRequest: (req, ctx) => (req.apiVersion <= MAX_VERSION ? ctx.forward() : ctx.respondFrame(unsupported(req.correlationId, MAX_VERSION))),
      onResponse: (res, ctx) => {
        let body: ApiVersionsResponse;
        try {
          body = res.body;
        } catch {
          return ctx.forwardFrame(unsupported(res.correlationId, 0));
        }
        return clampApiVersions(body, ctx.decodedApis) ? ctx.forward(body) : ctx.forward();
      },
    },
  },
};
