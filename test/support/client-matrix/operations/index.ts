/** The matrix's columns, in order. */
import { compactedRead } from './compacted-read.js';
import { configs } from './configs.js';
import { group } from './group.js';
import type { OperationCheck } from './operation.js';
import { produce } from './produce.js';
import { shareRead } from './share-read.js';
import { transactions } from './transactions.js';

export type { OperationCheck } from './operation.js';

export const OPERATIONS: readonly OperationCheck[] = [produce, group, transactions, configs, compactedRead, shareRead];
