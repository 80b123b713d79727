/** Re-encoding the requests and responses the config-layer interceptors change. */
import { decodeResponseHeader, responseHeaderVersion } from '../../protocol/headers.js';
import { decodeResponse, encodeRequestFrame, encodeResponseFrame } from '../../protocol/messages.js';
import type { InterceptedRequest } from '../../proxy/interceptor.js';

/** The request frame with a new body and the client's own header. */
export function requestFrame(req: InterceptedRequest, body: object): Buffer {
  const { apiKey, apiVersion, correlationId, clientId, unknownTags } = req.header;
  return encodeRequestFrame({ apiKey, apiVersion, correlationId, clientId, unknownTags }, body);
}

export function responseBody<T extends object>(req: InterceptedRequest, frame: Buffer): T {
  const header = decodeResponseHeader(frame.subarray(4), responseHeaderVersion(req.apiKey, req.apiVersion));
  return decodeResponse<T>(req.apiKey, req.apiVersion, frame, 4 + header.bodyOffset);
}

export function responseFrame(req: InterceptedRequest, body: object): Buffer {
  return encodeResponseFrame(req.apiKey, req.apiVersion, req.correlationId, body);
}
