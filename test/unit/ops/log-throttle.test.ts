import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger, setLogSink } from '../../../src/common/log.js';
import { LogThrottle } from '../../../src/common/log-throttle.js';

test('a warning many connections raise at once is logged once per interval, saying how many were held back', () => {
  const lines: Record<string, unknown>[] = [];
  const previous = setLogSink((line) => lines.push(JSON.parse(line)));
  try {
    let now = 1_000;
    const throttle = new LogThrottle(10_000, () => now);
    const log = createLogger();
    for (let i = 0; i < 80; i++) throttle.warn(log, 'connect 127.0.0.1:9092', 'upstream connect failed', { attempt: i });
    throttle.warn(log, 'connect 127.0.0.1:9093', 'upstream connect failed', { attempt: 0 });
    now += 10_000;
    throttle.warn(log, 'connect 127.0.0.1:9092', 'upstream connect failed', { attempt: 80 });
    const warns = lines.filter((l) => l.level === 'warn');
    assert.deepEqual(
      warns.map((l) => [l.attempt, l.alikeHeldBack]),
      [
        [0, undefined],
        [0, undefined],
        [80, 79],
      ],
    );
  } finally {
    setLogSink(previous);
  }
});

test('kinds past the most remembered are forgotten once their interval has ended', () => {
  const lines: Record<string, unknown>[] = [];
  const previous = setLogSink((line) => lines.push(JSON.parse(line)));
  try {
    let now = 0;
    const throttle = new LogThrottle(10, () => now);
    const log = createLogger();
    for (let i = 0; i < 5000; i++) {
      now = i;
      throttle.warn(log, `frame of ${i} bytes`, 'connection closed', {});
    }
    throttle.warn(log, 'frame of 4999 bytes', 'connection closed', { again: true });
    assert.equal(lines.filter((l) => l.level === 'warn').length, 5000, 'each distinct kind once, the repeat held back');
  } finally {
    setLogSink(previous);
  }
});
