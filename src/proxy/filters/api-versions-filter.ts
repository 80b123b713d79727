/**
 * ApiVersions: a request newer than the proxy can read gets Kafka's answer to a too-new
 * ApiVersions (a v0 body naming the versions it does speak, so the client retries with one of
 * them), and the upstream's answer is clamped to what the chain can decode (api-versions.ts).
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ApiKey, apiSchema, encodeResponseFrame } from '../../protocol/messages.js';
import { clampApiVersions } from '../api-versions.js';
import type { Filter } from '../filter/filter.js';

const MAX_VERSION = apiSchema(ApiKey.ApiVersions)!.maxVersion;

export const apiVersionsFilter: Filter = {
  name: 'api-versions',
  apis: {
    [ApiKey.ApiVersions]: {
      onRequest: (req, ctx) => {
        if (req.apiVersion <= MAX_VERSION) return ctx.forward();
        return ctx.respondFrame(
          encodeResponseFrame(ApiKey.ApiVersions, 0, req.correlationId, {
            errorCode: ErrorCode.UNSUPPORTED_VERSION,
            apiKeys: [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: MAX_VERSION }],
          }),
        );
      },
      onResponse: (res, ctx) => (clampApiVersions(res.body, ctx.decodedApis) ? ctx.forward(res.body) : ctx.forward()),
    },
  },
};
