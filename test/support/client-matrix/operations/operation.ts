/**
 * One column of the matrix: what it checks (shown in docs/client-matrix.md) and the check itself,
 * which prepares its own topic on the shared upstream, has the client do the operation through
 * kcompact and throws when anything differs from what a Kafka broker would give.
 */
import type { Harness } from '../harness.js';
import type { ClientDriver, Operation } from '../types.js';

export interface OperationCheck {
  op: Operation;
  /** The column's title. */
  title: string;
  /** What a pass means, as one markdown sentence for the matrix document. */
  checks: string;
  /** `name` is unique to the cell: the topic, and the prefix of groups and transactional ids. */
  run(h: Harness, client: ClientDriver, name: string): Promise<void>;
}
