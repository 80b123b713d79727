/** An answer of a route other than the change stream: a status, its JSON body and headers. */
export interface TableAnswer {
  status: number;
  /** Sent as JSON; a JsonText is sent as it is. */
  body: unknown;
  headers?: Readonly<Record<string, string>>;
}

/** A body already written as JSON text (with its final newline): an answer made once and sent many times. */
export class JsonText {
  constructor(readonly text: string) {}
}

/** A key's offset as an HTTP entity tag: what a client sends back in If-Match. */
export const etagOf = (offset: number): string => `"${offset}"`;
