/**
 * A request the fake broker keeps unanswered until the test says so: a request in flight for
 * as long as a test needs one (draining, shutdown).
 */
import type net from 'node:net';
import { encodeResponseFrame } from '../../src/protocol/messages.js';
import type { FakeBroker } from './fake-broker.js';

export interface HeldRequest {
  /** Whether the broker has received the request. */
  held(): boolean;
  /** Answers it with `body`, at the version it was asked. */
  answer(body: object): void;
}

export function holdNext(broker: FakeBroker, apiKey: number): HeldRequest {
  let pending: { frame: Buffer; socket: net.Socket } | undefined;
  broker.handle(apiKey, (frame, socket) => (pending = { frame, socket }));
  return {
    held: () => pending !== undefined,
    answer: (body) => {
      if (!pending) throw new Error(`the broker has not received the request (api ${apiKey}) yet`);
      const { frame, socket } = pending;
      socket.write(encodeResponseFrame(apiKey, frame.readInt16BE(6), frame.readInt32BE(8), body));
    },
  };
}
