/**
 * Topic ids are learned where topics are listed, created or deleted, so that filters of APIs that
 * name topics by id (Fetch v13+, Produce v13+) know which topic is meant. Responses go on unchanged.
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ApiKey } from '../../protocol/messages.js';
import type { Filter } from '../filter/filter.js';
import type { TopicIds } from '../topic-ids.js';

export function topicIdFilter(topics: TopicIds): Filter {
  return {
    name: 'topic-ids',
    apis: {
      [ApiKey.Metadata]: {
        onResponse: (res, ctx) => {
          topics.learnFrom(res.body.topics);
          return ctx.forward();
        },
      },
      [ApiKey.CreateTopics]: {
        minVersion: 7,
        onResponse: (res, ctx) => {
          topics.learnFrom(res.body.topics);
          return ctx.forward();
        },
      },
      [ApiKey.DeleteTopics]: {
        minVersion: 1,
        onResponse: (res, ctx) => {
          for (const t of res.body.responses) if (t.errorCode === ErrorCode.NONE && t.name) topics.forget(t.name);
          return ctx.forward();
        },
      },
    },
  };
}
