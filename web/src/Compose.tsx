import { useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useRef, useState, type ClipboardEvent, type DragEvent, type FormEvent, type KeyboardEvent, type RefObject } from 'react';
import { AddressField } from './AddressField';
import { ApiError } from './api';
import { useAutosave, type SaveState } from './autosave';
import { offerUndoSend } from './bulk';
import { emptyFields, RECIPIENT_ERRORS, SENDER_ERRORS, startFrom, startingHtml } from './compose';
import { htmlToText } from './htmltext';
import { composePath, mailPath, navigate, type MailView } from './router';
import { Attachments, useDraftFiles, type DraftFiles } from './ComposeFiles';
import { deleteDraft, sendDraft, useDraft, useSignatures, useSourceMessage, type Draft, type DraftAttachment, type DraftFields } from './sending';
import { rememberSent } from './Sent';
import type { Mailbox } from './types';
import './compose.css';

type ComposeView = Extract<MailView, { kind: 'compose' }>;

/** The editor is loaded only when a compose form opens: it is not part of the first page load. */
const RichEditor = lazy(() => import('./RichEditor'));

/**
 * Drafts this tab created, with the view that created them: the draft's URL replaces the compose URL, and the
 * form that made it stays mounted as it was (same key, no reload of what it already holds).
 */
const createdHere = new Map<string, ComposeView>();

const originOf = (view: ComposeView): ComposeView => (view.draftId !== null ? createdHere.get(view.draftId) : undefined) ?? view;

/** The React key of a compose view: a draft created by the open form keeps the form's key. */
export function composeKey(view: ComposeView): string {
  const origin = originOf(view);
  return origin.draftId ?? `new:${origin.source ?? ''}:${origin.mode}`;
}

const TITLES: Record<ComposeView['mode'], string> = { new: 'New message', reply: 'Reply', all: 'Reply to all', forward: 'Forward' };

function fromDraft(d: Draft): DraftFields {
  return { mailbox: d.mailbox, to: d.to.join(', '), cc: d.cc.join(', '), bcc: d.bcc.join(', '), subject: d.subject, body: d.body, html: d.html, in_reply_to: d.in_reply_to };
}

/** The compose form of a saved draft, of an answer or forward of a message, or of a new message. */
export function Compose(props: { view: ComposeView; mailbox: string | null; mailboxes: Mailbox[] }) {
  const { mailbox, mailboxes } = props;
  const view = originOf(props.view);
  const draft = useDraft(view.draftId);
  const source = useSourceMessage(view.draftId === null ? view.source : null);
  const signatures = useSignatures(view.draftId === null);
  const failed = draft.error ?? source.error;
  if (failed) {
    const gone = failed instanceof ApiError && failed.code === 'draft_not_found';
    return <p role="alert" className="error">{gone ? 'This draft was sent or discarded.' : failed instanceof ApiError ? failed.detail : 'could not load it'}</p>;
  }
  if (draft.isLoading || source.isLoading || signatures.isLoading) return <p className="loading" role="status">Loading…</p>;
  const sender = mailbox ?? mailboxes[0]?.address;
  let initial: DraftFields | null = null;
  if (draft.data) initial = fromDraft(draft.data);
  else if (source.data && view.mode !== 'new') initial = startFrom(source.data, view.mode);
  else if (sender !== undefined) initial = emptyFields(sender);
  if (initial === null) return <p className="muted">This workspace has no mailbox to send from yet.</p>;
  // A new message or answer starts with its mailbox's signature; a draft has it already, or not by its writer's choice.
  const from = initial.mailbox;
  const signature = view.draftId === null ? (signatures.data?.signatures.find((x) => x.mailbox === from)?.html ?? null) : null;
  const html = startingHtml(initial, signature);
  // The text part follows the HTML from the start, so a save before the first keystroke in the body keeps both alike.
  initial = { ...initial, html, body: initial.html === null ? htmlToText(html) : initial.body };
  const title = view.draftId !== null ? 'Draft' : TITLES[view.mode];
  const back = source.data ? mailPath(source.data.mailbox, source.data.folder, source.data.message_id) : mailPath(initial.mailbox, 'inbox');
  return <ComposeForm title={title} initial={initial} files={draft.data?.attachments ?? []} draftId={view.draftId} mailboxes={mailboxes} back={back} origin={view} />;
}

function SaveStatus({ state }: { state: SaveState }) {
  let text = '';
  if (state.kind === 'saving') text = 'Saving…';
  if (state.kind === 'saved') text = `Draft saved at ${state.at.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })}`;
  if (state.kind === 'error') text = state.recipients ? 'Draft saved without the recipients (see above)' : `Not saved: ${state.detail}`;
  return <p className="save-status muted" role="status" aria-live="polite">{text}</p>;
}

interface FormProps {
  title: string;
  initial: DraftFields;
  /** The draft's files as loaded; the form keeps its own list after that. */
  files: DraftAttachment[];
  draftId: string | null;
  mailboxes: Mailbox[];
  back: string;
  origin: ComposeView;
}

function ComposeForm({ title, initial, files, draftId, mailboxes, back, origin }: FormProps) {
  const client = useQueryClient();
  const [fields, setFields] = useState(initial);
  const [sendError, setSendError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  /** "Send later": a datetime-local value (the browser's time zone), empty to send now. */
  const [sendAt, setSendAt] = useState('');
  const saver = useAutosave(initial, draftId, (id) => {
    createdHere.set(id, origin);
    navigate(composePath(initial.mailbox, { draftId: id }), { replace: true });
    void client.invalidateQueries({ queryKey: ['drafts', 'list'] });
  });
  const first = useRef<HTMLInputElement>(null);
  const sending = useRef(false);
  const draftFiles = useDraftFiles(files, () => saver.saveNow());
  // An answer starts above the quote (the editor focuses its start); a new message at its first recipient.
  const startInBody = initial.to !== '';
  useEffect(() => {
    if (!startInBody) first.current?.focus();
  }, [startInBody]);

  const change = (patch: Partial<DraftFields>) => {
    const next = { ...fields, ...patch };
    setFields(next);
    saver.change(next);
  };

  async function send(event?: FormEvent) {
    event?.preventDefault();
    // Ctrl+Enter held down repeats: one send.
    if (sending.current) return;
    sending.current = true;
    setBusy(true);
    setSendError(null);
    try {
      const id = await saver.saveNow();
      await draftFiles.dropUnused(fields.html ?? '');
      // Before the request: counted from here, the toast ends before the server's window does.
      const started = Date.now();
      const later = sendAt ? new Date(sendAt).toISOString() : undefined;
      const answer = await sendDraft(id, { sendAt: later, hold: later === undefined });
      await saver.stop();
      rememberSent(answer);
      void client.invalidateQueries({ queryKey: ['drafts', 'list'] });
      void client.invalidateQueries({ queryKey: ['sent'] });
      if (answer.hold_seconds !== undefined) {
        // Held (undo send): the form closes to where it was opened from, and the toast offers Undo while it waits.
        offerUndoSend(answer.message_id, started + answer.hold_seconds * 1000);
        navigate(back, { replace: true });
      } else {
        navigate(mailPath(fields.mailbox, 'sent', answer.message_id), { replace: true });
      }
    } catch (err) {
      setSendError(err instanceof ApiError ? err : new ApiError(0, 'network', 'the server did not answer; try again'));
      sending.current = false;
      setBusy(false);
    }
  }

  async function discard() {
    setBusy(true);
    const id = await saver.stop();
    if (id !== null) await deleteDraft(id).catch(() => undefined);
    void client.invalidateQueries({ queryKey: ['drafts', 'list'] });
    navigate(back, { replace: true });
  }

  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void send();
    }
  };
  const saveState = saver.state;
  const recipientsProblem = sendError && RECIPIENT_ERRORS.has(sendError.code) ? sendError.detail
    : sendError?.code === 'invalid_request' && /\b(to|cc|bcc)\b/.test(sendError.detail) ? sendError.detail
      : saveState.kind === 'error' && saveState.recipients ? saveState.detail : null;
  const senderProblem = sendError && SENDER_ERRORS.has(sendError.code) ? sendError.detail : null;
  const otherProblem = sendError && recipientsProblem !== sendError.detail && senderProblem === null ? sendError : null;

  return (
    <section className="compose" aria-labelledby="compose-title" {...dropZone(draftFiles)}>
      <h1 id="compose-title">{title}</h1>
      {draftFiles.dragging && <div className="drop-zone" aria-hidden="true">Drop files to attach them</div>}
      <form onSubmit={(e) => void send(e)} onKeyDown={onKey} onPaste={(e) => pasted(e, draftFiles)} noValidate>
        <div className="field">
          <label htmlFor="compose-from">From</label>
          <select id="compose-from" value={fields.mailbox} onChange={(e) => change({ mailbox: e.target.value })}
            aria-invalid={senderProblem !== null} aria-describedby={senderProblem ? 'compose-from-error' : undefined}>
            {mailboxes.map((m) => <option key={m.address} value={m.address}>{m.address}</option>)}
            {!mailboxes.some((m) => m.address === fields.mailbox) && <option value={fields.mailbox}>{fields.mailbox}</option>}
          </select>
          {senderProblem && <p id="compose-from-error" className="error" role="alert">{senderProblem}</p>}
        </div>
        <Recipients fields={fields} change={change} firstRef={first} problem={recipientsProblem} alert={sendError !== null} />
        <div className="field">
          <label htmlFor="compose-subject">Subject</label>
          <input id="compose-subject" value={fields.subject} maxLength={998} onChange={(e) => change({ subject: e.target.value })} />
        </div>
        <div className="field body-field">
          <span id="compose-body-label" className="label">Message</span>
          <Suspense fallback={<p className="loading" role="status">Loading the editor…</p>}>
            <RichEditor initialHtml={initial.html ?? ''} labelledBy="compose-body-label" autofocus={startInBody}
              onChange={(html) => change({ html, body: htmlToText(html) })}
              onImage={draftFiles.addInline} onFiles={draftFiles.add} imageSource={draftFiles.imageSource} />
          </Suspense>
        </div>
        <Attachments files={draftFiles} />
        {fields.in_reply_to && <p className="muted thread-note">An answer: it joins the conversation of the message it answers.</p>}
        {otherProblem && <SendProblem error={otherProblem} onNewMessage={() => change({ in_reply_to: null })} />}
        <div className="compose-actions">
          <button type="submit" className="primary" disabled={busy} aria-keyshortcuts="Control+Enter Meta+Enter" title="Send (Ctrl+Enter)">{busy ? 'Sending…' : sendAt ? 'Schedule' : 'Send'}</button>
          <label htmlFor="compose-send-at" className="send-later">Send later</label>
          <input id="compose-send-at" type="datetime-local" value={sendAt} onChange={(e) => setSendAt(e.target.value)} aria-describedby="compose-send-at-hint" />
          <span id="compose-send-at-hint" className="muted hint">up to 30 days ahead; empty sends now</span>
          <button type="button" onClick={() => void discard()} disabled={busy}>Discard</button>
          <SaveStatus state={saveState} />
        </div>
      </form>
    </section>
  );
}

function Recipients(props: {
  fields: DraftFields;
  change: (patch: Partial<DraftFields>) => void;
  firstRef: RefObject<HTMLInputElement | null>;
  problem: string | null;
  alert: boolean;
}) {
  const { fields, change, problem } = props;
  const described = problem ? 'compose-recipients-error compose-recipients-hint' : 'compose-recipients-hint';
  const input = (key: 'to' | 'cc' | 'bcc', label: string) => (
    <AddressField id={`compose-${key}`} label={label} inputRef={key === 'to' ? props.firstRef : undefined} value={fields[key]}
      onChange={(value) => change({ [key]: value })} invalid={problem !== null} describedBy={described} />
  );
  return (
    <fieldset className="recipients">
      <legend className="visually-hidden">Recipients</legend>
      {input('to', 'To')}
      {input('cc', 'Cc')}
      {input('bcc', 'Bcc')}
      <p id="compose-recipients-hint" className="muted hint">Addresses separated by commas.</p>
      {problem && <p id="compose-recipients-error" className="error" role={props.alert ? 'alert' : undefined}>{problem}</p>}
    </fieldset>
  );
}

const carriesFiles = (e: DragEvent) => e.dataTransfer.types.includes('Files');

/**
 * The whole form is a drop target for files (the file input stays the way to attach from the keyboard). A drop on the
 * editor is the editor's: an image goes inline there, and the event arrives here already handled.
 */
function dropZone(files: DraftFiles) {
  return {
    onDragEnter: (e: DragEvent) => carriesFiles(e) && files.setDragging(true),
    onDragOver: (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    },
    onDragLeave: (e: DragEvent) => {
      // Leaving for a child is not leaving the form.
      if (e.relatedTarget instanceof globalThis.Node && e.currentTarget.contains(e.relatedTarget)) return;
      files.setDragging(false);
    },
    onDrop: (e: DragEvent) => {
      files.setDragging(false);
      if (e.defaultPrevented || !carriesFiles(e)) return;
      e.preventDefault();
      files.add([...e.dataTransfer.files]);
    },
  };
}

/** A file pasted into any field but the editor (which takes its own) is attached. */
function pasted(e: ClipboardEvent, files: DraftFiles): void {
  if (e.defaultPrevented) return;
  const picked = [...e.clipboardData.files];
  if (picked.length === 0) return;
  e.preventDefault();
  files.add(picked);
}

function SendProblem({ error, onNewMessage }: { error: ApiError; onNewMessage: () => void }) {
  return (
    <div className="error" role="alert">
      <p>Not sent: {error.detail}</p>
      {error.code === 'message_not_found' && (
        <button type="button" onClick={onNewMessage}>Send it as a new message instead</button>
      )}
    </div>
  );
}
