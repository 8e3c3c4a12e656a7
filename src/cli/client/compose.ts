import type { Command } from 'commander';
import { CliError } from './errors.js';
import { trimEnd } from './format.js';
import { collect } from './options.js';
import { readTextFile } from './prompt.js';

/** The options that write a message, shared by `send`, `drafts create` and `drafts edit`. */
export interface ComposeOptions {
  to?: string[];
  cc?: string[];
  bcc?: string[];
  subject?: string;
  body?: string;
  bodyFile?: string;
  htmlFile?: string;
}

export function withComposeOptions(command: Command, { required }: { required: boolean }): Command {
  const recipients = required ? ' (required)' : '';
  return command
    .option('--to <address>', `a recipient${recipients}; repeat, or separate with commas`, collect)
    .option('--cc <address>', 'a copy recipient; repeat, or separate with commas', collect)
    .option('--bcc <address>', 'a blind copy recipient; repeat, or separate with commas', collect)
    .option('--subject <text>', `the subject${recipients}`)
    .option('--body <text>', 'the plain-text body')
    .option('--body-file <path>', 'read the plain-text body from a file (- for standard input)')
    .option('--html-file <path>', 'read an HTML alternative from a file (- for standard input)');
}

/** The body and HTML the options give (files read), leaving out what they do not give. */
export async function composedContent(options: ComposeOptions): Promise<{ body?: string; html?: string }> {
  if (options.body !== undefined && options.bodyFile !== undefined) throw new CliError('give --body or --body-file, not both');
  if (options.bodyFile === '-' && options.htmlFile === '-') throw new CliError('only one of --body-file and --html-file can read standard input');
  const content: { body?: string; html?: string } = {};
  if (options.body !== undefined) content.body = options.body;
  if (options.bodyFile !== undefined) content.body = await readTextFile(options.bodyFile);
  if (options.htmlFile !== undefined) content.html = await readTextFile(options.htmlFile);
  return content;
}

/** The fields the editor shows and reads back. */
export interface EditableDraft {
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  body: string;
}

const FIELDS = { to: 'To', cc: 'Cc', bcc: 'Bcc', subject: 'Subject' } as const;

/**
 * The text the editor opens: header fields, an empty line, the body (the shape of a mail message, so it
 * reads naturally). Comment lines explain it and are dropped when it is read back; `ending` says what
 * saving an empty file does.
 */
export function draftTemplate(draft: EditableDraft, mailbox: string, ending = 'An empty file saves nothing.'): string {
  return [
    `To: ${draft.to.join(', ')}`,
    `Cc: ${draft.cc.join(', ')}`,
    `Bcc: ${draft.bcc.join(', ')}`,
    `Subject: ${draft.subject}`,
    `# From ${mailbox}. Write the body below the empty line. Lines starting with # above it`,
    `# are ignored. Separate addresses with commas. ${ending}`,
    '',
    draft.body,
  ].join('\n');
}

/** Read the editor's text back: `Field: value` lines up to the first empty line, then the body. */
export function parseDraftText(text: string): EditableDraft {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const draft: EditableDraft = { to: [], cc: [], bcc: [], subject: '', body: '' };
  let i = 0;
  for (; i < lines.length; i += 1) {
    const line = lines[i] ?? '';
    if (line.trim() === '') break;
    if (line.startsWith('#')) continue;
    const match = /^([A-Za-z-]+)\s*:\s?(.*)$/.exec(line);
    const key = match ? (Object.keys(FIELDS) as (keyof typeof FIELDS)[]).find((k) => k === match[1]?.toLowerCase()) : undefined;
    if (!match || !key) throw new CliError(`line ${i + 1} of the draft is not one of To:, Cc:, Bcc:, Subject: (write the body below an empty line)`);
    const value = match[2] ?? '';
    if (key === 'subject') draft.subject = value.trim();
    else draft[key] = collect(value);
  }
  draft.body = trimEnd(lines.slice(i + 1).join('\n'), '\n');
  return draft;
}

export const isEmptyDraft = (d: EditableDraft): boolean => d.to.length + d.cc.length + d.bcc.length === 0 && d.subject === '' && d.body.trim() === '';
