import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import type { Db } from './database.js';

/** The channel every process of one database LISTENs on. */
export const WAKEUP_CHANNEL = 'mailroom_wakeups';
const RECONNECT_FIRST_MS = 100;
const RECONNECT_MAX_MS = 5000;
/** Topics one NOTIFY statement carries at most (well under the bound parameters a statement may have). */
const NOTIFY_BATCH = 100;

export interface NotificationLog {
  warn(details: object, message: string): void;
}

/**
 * Signals between the processes sharing a PostgreSQL database (LISTEN/NOTIFY): one dedicated connection
 * per process listens; a topic ('events:<workspace>', 'queue:<name>') is published on its own after the
 * commit it announces, so it never adds a statement to the writing transaction. A process ignores its own
 * notices (its after-commit hooks have already rung).
 */
export interface Notifications {
  /** NOTIFY on its own, after what it announces has committed; topics of one turn of the event loop go together. */
  publishSoon(topic: string): void;
  close(): Promise<void>;
}

export function createNotifications(deps: {
  url: string;
  db: Db;
  log: NotificationLog;
  /** A topic another process published. */
  onTopic: (topic: string) => void;
  /** The listening connection was lost and is back: notices may have been missed, so look again. */
  onReconnect: () => void;
}): Notifications {
  const me = randomBytes(6).toString('hex');
  let client: pg.Client | undefined;
  let closing = false;
  let timer: NodeJS.Timeout | undefined;
  let delay = RECONNECT_FIRST_MS;
  let connectedBefore = false;
  const soon = new Set<string>();

  function retry(): void {
    if (closing || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void connect();
    }, delay);
    delay = Math.min(delay * 2, RECONNECT_MAX_MS);
  }

  async function connect(): Promise<void> {
    const next = new pg.Client({ connectionString: deps.url });
    client = next;
    const lost = (err?: unknown): void => {
      if (client !== next) return;
      client = undefined;
      next.removeAllListeners();
      next.on('error', () => undefined);
      void next.end().catch(() => undefined);
      if (!closing) deps.log.warn({ err }, 'notification listener lost its connection; reconnecting');
      retry();
    };
    next.on('error', lost);
    next.on('end', () => lost());
    next.on('notification', (message) => {
      const payload = message.payload ?? '';
      const cut = payload.indexOf(' ');
      if (cut < 0 || payload.slice(0, cut) === me) return;
      deps.onTopic(payload.slice(cut + 1));
    });
    try {
      await next.connect();
      // A fixed statement on a connection Kysely does not manage (it must stay checked out to hear notices).
      await next.query(`LISTEN ${WAKEUP_CHANNEL}`);
    } catch (err) {
      lost(err);
      return;
    }
    if (closing) return void next.end().catch(() => undefined);
    delay = RECONNECT_FIRST_MS;
    if (connectedBefore) deps.onReconnect();
    connectedBefore = true;
  }

  function flush(): void {
    const topics = [...soon];
    soon.clear();
    // One statement for the turn's topics (an arrival rings both its events' and its mailbox's), each still a notice
    // of its own, so receivers read them as before.
    for (let i = 0; i < topics.length; i += NOTIFY_BATCH) {
      const batch = topics.slice(i, i + NOTIFY_BATCH);
      const notices = sql.join(batch.map((topic) => sql`pg_notify(${WAKEUP_CHANNEL}, ${`${me} ${topic}`})`));
      sql`select ${notices}`.execute(deps.db).catch((err: unknown) => {
        if (!closing) deps.log.warn({ err, topics: batch }, 'could not publish a wake-up');
      });
    }
  }

  void connect();
  return {
    publishSoon(topic) {
      if (closing) return;
      if (soon.size === 0) setImmediate(flush);
      soon.add(topic);
    },
    async close() {
      closing = true;
      clearTimeout(timer);
      const current = client;
      client = undefined;
      if (current) await current.end().catch(() => undefined);
    },
  };
}
