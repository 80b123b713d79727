/** An answer of a route other than the change stream: a status, its JSON body and headers. */
export interface TableAnswer {
  status: number;
  body: unknown;
  headers?: Readonly<Record<string, string>>;
}

/** A key's offset as an HTTP entity tag: what a client sends back in If-Match. */
export const etagOf = (offset: number): string => `"${offset}"`;
