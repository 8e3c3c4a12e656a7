/** A listener of the service and the variables that move it, for the message that says which one to change. */
export interface ListenerSettings {
  /** What listens, as a person calls it: `HTTP API`, `SMTP`. */
  service: string;
  host: string;
  port: number;
  hostVariable: string;
  portVariable: string;
}

/** A listener could not start for a reason the operator fixes with a setting; its message is the whole story. */
export class ListenError extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'ListenError';
  }
}

const REASONS: Record<string, (l: ListenerSettings) => string> = {
  EADDRINUSE: (l) => `the port is already in use; stop what holds it, or set ${l.portVariable} to a free port (0 picks one)`,
  EACCES: (l) => `permission denied (ports below 1024 need privileges); set ${l.portVariable} to 1024 or above`,
  EADDRNOTAVAIL: (l) => `the address is not one of this machine's; set ${l.hostVariable} to one (127.0.0.1, or 0.0.0.0 for all)`,
  ENOTFOUND: (l) => `the host name does not resolve; set ${l.hostVariable} to an IP address (127.0.0.1, or 0.0.0.0 for all)`,
};

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** A `ListenError` naming the address, the port and the variable for a failure a setting fixes; anything else as it is. */
export function explainListenError(err: unknown, listener: ListenerSettings): unknown {
  const code = err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
  const reason = code === undefined ? undefined : REASONS[code];
  if (!reason) return err;
  return new ListenError(`${listener.service} cannot listen on ${hostPort(listener.host, listener.port)}: ${reason(listener)}`, { cause: err });
}

/** Run `listen`, turning the failures a setting fixes into a `ListenError`. */
export async function listenOrExplain<T>(listener: ListenerSettings, listen: () => Promise<T>): Promise<T> {
  try {
    return await listen();
  } catch (err) {
    throw explainListenError(err, listener);
  }
}
