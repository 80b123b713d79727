/**
 * The node flags kcompact runs with: deploy/Dockerfile's ENTRYPOINT, scripts/run-local.sh and this
 * CLI's own shebang repeat them (test/integration/deploy-manifests.test.ts keeps them equal).
 *
 * --initial-old-space-size=64: V8 starts an isolate's old generation with a small allocation
 * limit. Once its live old space passes ~8 MB (the proxy's does, with prom-client loaded), the
 * Buffers every upstream read allocates count against that limit, and on a consumer's stream of
 * Fetch responses V8 ran full mark-compacts one after another, multiplying the proxy's CPU per
 * relayed gigabyte. A 64 MiB starting limit leaves room for those Buffers, and the full
 * collections all but stop (docs/performance.md).
 *
 * --expose-gc: gives each thread the gc() that common/idle-collection.ts runs once the thread has
 * gone quiet after a burst, so that an idle proxy does not keep the burst's dead Buffers.
 *
 * --no-lazy-feedback-allocation: V8 gives a function its inline caches only after it has run for
 * a while, and optimizes it only after that. A new replica's first reads run the fetch view's
 * loops, which walk tens of thousands of batch headers per answer, for the first time: with the
 * caches from the first call they reach their fast forms within the first answer, not several
 * answers later. It costs the feedback vectors of functions that ran only once
 * (docs/performance.md has both sides measured).
 */
export const NODE_FLAGS: readonly string[] = ['--initial-old-space-size=64', '--expose-gc', '--no-lazy-feedback-allocation'];
