/**
 * A schema registry that accepts requests and never answers: close() ends a resolve waiting on
 * it at once (the worker is stopping), not at the request timeout, and refuses later ones.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { RegistrySchemas } from '../../../../src/engine/key-identity/registry-schemas.js';
import { SchemaUnavailableError } from '../../../../src/engine/key-identity/schema-unavailable.js';
import { capturingLogger } from '../../../support/capturing-logger.js';

const stopping = (err: unknown) => err instanceof SchemaUnavailableError && err.reason === 'the proxy is stopping';

test('close() ends a resolve waiting on a registry that does not answer', { timeout: 10_000 }, async () => {
  let asked = 0;
  const server = http.createServer(() => void asked++);
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const schemas = new RegistrySchemas(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, 60_000, capturingLogger([]));
  try {
    const resolving = schemas.resolve([1]);
    while (asked === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    let ended = false;
    void resolving.catch(() => undefined).finally(() => (ended = true));
    schemas.close();
    // close() ends the resolve itself: by the next turn of the event loop, with no timer run and
    // long before the 60 s request timeout, it has its answer, and the answer says why.
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(ended, true, 'at once');
    await assert.rejects(resolving, stopping);
    await assert.rejects(schemas.resolve([2]), stopping);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
