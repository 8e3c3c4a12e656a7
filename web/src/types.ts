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

/**
 * Every member of the string union `T` (an enum of the API) as a list in the app's own order: a member left out, or
 * a value the API does not have, fails to compile, so the app's lists cannot drift from the API's.
 */
export const everyOf =
  <T extends string>() =>
  <const V extends readonly T[]>(values: V & ([Exclude<T, V[number]>] extends [never] ? unknown : { readonly missing: Exclude<T, V[number]> })): V =>
    values;

export type Folder = Schema<'MessageListItem'>['folder'];
export const FOLDERS = everyOf<Folder>()(['inbox', 'archive', 'sent', 'spam', 'trash']);

/** A folder name the page holds as text (a select's value), as one of the folders; an unknown one reads as inbox. */
export const folderOf = (name: string): Folder => FOLDERS.find((f) => f === name) ?? 'inbox';

export type Message = Schema<'MessageListItem'>;
export type FullMessage = Schema<'Message'>;
export type MessagePage = Schema<'MessagePage'>;
/** A thread with its messages, oldest first. */
export type Thread = Schema<'ThreadDetail'>;
