import type { components } from '../../src/sdk/openapi';

// The session API's objects: the types generated from /openapi.json (src/sdk/openapi.d.ts, `npm run sdk`), so that a
// field the server renames or drops breaks the app's build. Type-only: nothing of it reaches the bundle.

/** A schema of the API by its name in /openapi.json. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

export type Workspace = Schema<'WorkspaceMembership'>;
export type SessionInfo = Schema<'Session'>;
export type Mailbox = Schema<'Mailbox'>;
export type Address = Schema<'Address'>;
export type Attachment = Schema<'Attachment'>;

export const FOLDERS = ['inbox', 'archive', 'sent', 'spam', 'trash'] as const;
export type Folder = (typeof FOLDERS)[number];

/** A folder name as the API gives it (a string), as one of the app's folders; an unknown one reads as inbox. */
export const folderOf = (name: string): Folder => FOLDERS.find((f) => f === name) ?? 'inbox';

export type Message = Schema<'MessageListItem'>;
export type FullMessage = Schema<'Message'>;
export type MessagePage = Schema<'MessagePage'>;
/** A thread with its messages, oldest first. */
export type Thread = Schema<'ThreadDetail'>;
