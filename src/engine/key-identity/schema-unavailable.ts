/**
 * A key schema the registry cannot give: the partition waits rather than guess at its keys.
 * Apart from registry-schemas.ts so that the indexer can tell it without loading the registry's
 * client library, which only replicas with a schema registry need.
 */
export class SchemaUnavailableError extends Error {
  override readonly name = 'SchemaUnavailableError';
  constructor(
    readonly schemaId: number,
    readonly registry: string,
    readonly reason: string,
  ) {
    super(`key schema id ${schemaId} is not available from the schema registry at ${registry}: ${reason}`);
  }
}
