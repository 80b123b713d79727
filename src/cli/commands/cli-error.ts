/**
 * A failure the CLI reports as one line and an exit code, without a stack: 1 when the operation
 * could not be done (endpoint unreachable, unknown topic, a clean failed), 2 for invalid
 * configuration or usage.
 */
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILED,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
