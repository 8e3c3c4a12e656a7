/** A failure the client reports as one line (`error: …`) and exit status 1: bad input, no session, no server. */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/** The server refused the request with `{error, detail}` (or something we could make one of). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(`${status} ${code}: ${detail}`);
    this.name = 'ApiError';
  }
}

/** The user interrupted a prompt (Ctrl-C). */
export class Interrupted extends Error {
  constructor() {
    super('interrupted');
    this.name = 'Interrupted';
  }
}
