/**
 * Each workspace's share of this process's IMAP work, across its listeners (IMAP and IMAPS): logged-in sessions
 * per workspace (over it LOGIN is refused, as Dovecot refuses past mail_max_userip_connections), and turns at
 * running a command (a fair gate: a cap in all, a share per workspace, waiting workspaces served round-robin), so
 * one workspace's clients fetching whole folders cannot keep another's commands waiting behind theirs.
 */
import { createFairGate, type FairGate, type Release } from '../../lib/fair-gate.js';

export interface ImapShareLimits {
  /** Logged-in sessions one workspace may hold at once. */
  sessionsPerWorkspace: number;
  /** Commands running at once in all (a command waiting for its client to read its responses holds its turn). */
  commands: number;
  /** Commands of one workspace running at once. */
  commandsPerWorkspace: number;
}

export interface ImapShares {
  /** A logged-in session's place for `workspaceId`; null when the workspace holds its share. Release when it ends. */
  admit(workspaceId: string): Release | null;
  /** Sessions logged in now for one workspace. */
  sessionsOf(workspaceId: string): number;
  /** Turns at running a command, keyed by workspace. */
  readonly commands: FairGate;
}

export function createImapShares(limits: ImapShareLimits): ImapShares {
  const sessions = new Map<string, number>();
  const commands = createFairGate({ total: limits.commands, perKey: limits.commandsPerWorkspace });
  return {
    admit(workspaceId) {
      const held = sessions.get(workspaceId) ?? 0;
      if (held >= limits.sessionsPerWorkspace) return null;
      sessions.set(workspaceId, held + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (sessions.get(workspaceId) ?? 1) - 1;
        if (left <= 0) sessions.delete(workspaceId);
        else sessions.set(workspaceId, left);
      };
    },
    sessionsOf: (workspaceId) => sessions.get(workspaceId) ?? 0,
    commands,
  };
}

/** The config's defaults, for a server made without shares of its own (tests). */
export const DEFAULT_IMAP_SHARES: ImapShareLimits = { sessionsPerWorkspace: 100, commands: 32, commandsPerWorkspace: 4 };
