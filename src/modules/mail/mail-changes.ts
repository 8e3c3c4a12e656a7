/**
 * "Mailbox M of workspace W changed": raised by the mail store wherever a folder's modseq is raised (`bumpFolder`:
 * arrivals, reads, flags, labels, moves, deletes, IMAP STORE and EXPUNGE, retention), rung after the commit, once
 * per mailbox and transaction, for the listener the composition root registered for that database (services.ts:
 * this process's `MailSignal` at once, the other processes through a NOTIFY). Mail clients' IDLE hears it.
 */
import type { Kysely } from 'kysely';
import { afterCommit } from '../../db/commit-hooks.js';

type Handle = Pick<Kysely<unknown>, 'isTransaction' | 'getExecutor'>;
export type MailChangeListener = (workspaceId: string, mailboxId: string) => void;

// Keyed by the database's adapter, which one Kysely instance's pool and all its transactions share: two services
// on two databases in one process (tests) each hear their own.
const listeners = new WeakMap<object, MailChangeListener>();
const rungIn = new WeakMap<object, Set<string>>();

/** Hear the committed mail changes made through `db`; returns the function that stops. */
export function onMailChanges(db: Handle, listener: MailChangeListener): () => void {
  const key = db.getExecutor().adapter;
  listeners.set(key, listener);
  return () => {
    if (listeners.get(key) === listener) listeners.delete(key);
  };
}

/** Ring "mailbox changed" once the transaction `db` belongs to commits (never if it rolls back); adds no statement. */
export async function mailChanged(db: Handle, workspaceId: string, mailboxId: string): Promise<void> {
  const listener = listeners.get(db.getExecutor().adapter);
  if (!listener) return;
  if (db.isTransaction) {
    const key = `${workspaceId}/${mailboxId}`;
    let rung = rungIn.get(db);
    if (!rung) rungIn.set(db, (rung = new Set()));
    if (rung.has(key)) return;
    rung.add(key);
  }
  await afterCommit(db, () => listener(workspaceId, mailboxId));
}

/**
 * The signal mail clients' sessions wait on: rung per mailbox, by this process's commits and by other processes'
 * NOTIFYs alike (a topic per mailbox: a change wakes only the sessions of its mailbox, wherever they are);
 * `notifyAll` asks every listener to look again (after the notification channel reconnects).
 */
export interface MailSignal {
  notify(workspaceId: string, mailboxId: string): void;
  notifyAll(): void;
  /** Hear one mailbox's changes; returns the function that stops listening. */
  subscribe(workspaceId: string, mailboxId: string, listener: () => void): () => void;
}

export function createMailSignal(): MailSignal {
  const byWorkspace = new Map<string, Map<string, Set<() => void>>>();
  const call = (sets: Iterable<Set<() => void>>) => {
    for (const listener of [...sets].flatMap((set) => [...set])) listener();
  };
  return {
    notify(workspaceId, mailboxId) {
      const set = byWorkspace.get(workspaceId)?.get(mailboxId);
      if (set) call([set]);
    },
    notifyAll() {
      call([...byWorkspace.values()].flatMap((mailboxes) => [...mailboxes.values()]));
    },
    subscribe(workspaceId, mailboxId, listener) {
      let mailboxes = byWorkspace.get(workspaceId);
      if (!mailboxes) byWorkspace.set(workspaceId, (mailboxes = new Map<string, Set<() => void>>()));
      let set = mailboxes.get(mailboxId);
      if (!set) mailboxes.set(mailboxId, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size > 0 || mailboxes.get(mailboxId) !== set) return;
        mailboxes.delete(mailboxId);
        if (mailboxes.size === 0 && byWorkspace.get(workspaceId) === mailboxes) byWorkspace.delete(workspaceId);
      };
    },
  };
}
