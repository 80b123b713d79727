/**
 * IncrementalAlterConfigs' operations on a topic's owned overrides, as Kafka's controller applies
 * them (ConfigurationControlManager): SET and DELETE replace or drop the raw value; APPEND and
 * SUBTRACT work on list configs item by item, starting from Kafka's own default when the topic
 * has no override. The caller validates the resulting state.
 */
import { ErrorCode } from '../../protocol/errors.js';
import { formatConfigValue, TOPIC_CONFIG } from './definitions.js';
import type { TopicOverrides } from './effective-policy.js';
import { javaSplitComma } from './java-values.js';

export const AlterOp = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

const OP_NAME: Record<number, string> = { [AlterOp.APPEND]: 'APPEND', [AlterOp.SUBTRACT]: 'SUBTRACT' };

export interface AlterOperation {
  name: string;
  configOperation: number;
  value: string | null;
}

export type OpsResult = { ok: true; overrides: Record<string, string> } | { ok: false; errorCode: number; message: string | null };

/** Applies ops on owned configs (nulls and duplicate keys already refused) to the current overrides. */
export function applyIncrementalOps(current: TopicOverrides, ops: readonly AlterOperation[]): OpsResult {
  const next: Record<string, string> = { ...current };
  for (const op of ops) {
    const def = TOPIC_CONFIG.get(op.name)!;
    switch (op.configOperation) {
      case AlterOp.SET:
        next[op.name] = op.value!;
        break;
      case AlterOp.DELETE:
        delete next[op.name];
        break;
      case AlterOp.APPEND:
      case AlterOp.SUBTRACT: {
        if (def.type !== 'LIST') {
          return {
            ok: false,
            errorCode: ErrorCode.INVALID_CONFIG,
            message: `Can't ${OP_NAME[op.configOperation]} to key ${op.name} because its type is not LIST.`,
          };
        }
        const base = next[op.name] ?? formatConfigValue(def.type, def.defaultValue);
        const items = base.split(',').filter((s) => s !== '');
        for (const item of javaSplitComma(op.value!)) {
          if (op.configOperation === AlterOp.APPEND) {
            if (!items.includes(item)) items.push(item);
          } else {
            const at = items.indexOf(item);
            if (at >= 0) items.splice(at, 1);
          }
        }
        next[op.name] = items.join(',');
        break;
      }
      default:
        // Kafka fails an unknown operation id with an unexpected exception: UNKNOWN_SERVER_ERROR, no message.
        return { ok: false, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, message: null };
    }
  }
  return { ok: true, overrides: next };
}
