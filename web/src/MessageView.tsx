import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { ApiError, download } from './api';
import { bytes, longDate, person } from './format';
import { MessageBody } from './MessageBody';
import { AuthBadge, Original } from './MessageTruth';
import { AttachmentPreview, previewable } from './Preview';
import { invalidateMail, useMessage, useMessageAction, useThread, type MessageAction } from './queries';
import { composePath, mailPath, navigate, type ComposeMode } from './router';
import { Delivery } from './Sent';
import { FOLDERS, folderOf, type FullMessage } from './types';

function Toolbar({ message, onBack }: { message: FullMessage; onBack: () => void }) {
  const action = useMessageAction();
  const run = (a: MessageAction, leave = true) => {
    action.mutate({ id: message.message_id, action: a });
    if (leave) onBack();
  };
  const spam = message.folder === 'spam';
  return (
    <div className="toolbar" role="toolbar" aria-label="Message actions">
      <button type="button" onClick={onBack}>← Back</button>
      {(['reply', 'all', 'forward'] as const).map((mode: ComposeMode) => (
        <button key={mode} type="button" onClick={() => navigate(composePath(message.mailbox, { source: message.message_id, mode }))}>
          {mode === 'reply' ? 'Reply' : mode === 'all' ? 'Reply all' : 'Forward'}
        </button>
      ))}
      {message.folder !== 'archive' && <button type="button" onClick={() => run({ kind: 'move', folder: 'archive' })}>Archive</button>}
      <button type="button" onClick={() => run(spam ? { kind: 'not-spam' } : { kind: 'spam' })}>{spam ? 'Not spam' : 'Spam'}</button>
      {message.folder === 'trash' ? (
        <button type="button" className="danger" onClick={() => window.confirm('Delete this message for good?') && run({ kind: 'delete' })}>Delete forever</button>
      ) : (
        <button type="button" onClick={() => run({ kind: 'move', folder: 'trash' })}>Delete</button>
      )}
      <Star message={message} />
      <button type="button" onClick={() => run({ kind: 'read', read: false })}>Mark unread</button>
      <label htmlFor="move-to" className="visually-hidden">Move to folder</label>
      <select id="move-to" value="" onChange={(e) => e.target.value && run({ kind: 'move', folder: folderOf(e.target.value) })}>
        <option value="">Move to…</option>
        {FOLDERS.filter((f) => f !== message.folder).map((f) => <option key={f} value={f}>{f}</option>)}
      </select>
    </div>
  );
}

/** The star (flagged): the answer's flag goes into the open message, which mail events do not refetch. */
function Star({ message }: { message: FullMessage }) {
  const client = useQueryClient();
  const action = useMessageAction();
  async function toggle() {
    const answer = (await action.mutateAsync({ id: message.message_id, action: { kind: 'flag', flagged: !message.flagged } })) as { flagged: boolean };
    client.setQueryData<FullMessage>(['message', message.message_id], (m) => (m ? { ...m, flagged: answer.flagged } : m));
  }
  return (
    <button type="button" aria-pressed={message.flagged} onClick={() => void toggle().catch(() => undefined)}>
      {message.flagged ? '★ Starred' : '☆ Star'}
    </button>
  );
}

function Labels({ message }: { message: FullMessage }) {
  const client = useQueryClient();
  const action = useMessageAction();
  const [label, setLabel] = useState('');
  const [labels, setLabels] = useState(message.labels);
  const [error, setError] = useState<string | null>(null);
  async function change(add: string[], remove: string[]) {
    setError(null);
    try {
      const answer = (await action.mutateAsync({ id: message.message_id, action: { kind: 'labels', add, remove } })) as { labels: string[] };
      setLabels(answer.labels);
      client.setQueryData<FullMessage>(['message', message.message_id], (m) => (m ? { ...m, labels: answer.labels } : m));
    } catch (err) {
      setError(err instanceof ApiError ? err.detail : 'could not change the labels');
    }
  }
  function submit(event: FormEvent) {
    event.preventDefault();
    const name = label.trim().toLowerCase();
    if (name) void change([name], []).then(() => setLabel(''));
  }
  return (
    <div className="labels">
      <ul aria-label="Labels">
        {labels.map((l) => (
          <li key={l} className="label">
            {l} <button type="button" className="link" aria-label={`Remove label ${l}`} onClick={() => void change([], [l])}>×</button>
          </li>
        ))}
      </ul>
      <form onSubmit={submit} className="inline">
        <label htmlFor="add-label">Add label</label>
        <input id="add-label" value={label} onChange={(e) => setLabel(e.target.value)} pattern="[a-z0-9_.:\-]+" maxLength={64} />
        <button type="submit">Add</button>
      </form>
      {error && <p className="error" role="alert">{error}</p>}
    </div>
  );
}

function Attachments({ message }: { message: FullMessage }) {
  const [error, setError] = useState<string | null>(null);
  const [shown, setShown] = useState<string | null>(null);
  if (message.attachments.length === 0) return null;
  const fetchOne = (id: string, name: string) =>
    download(message.message_id, id, name).catch((err: unknown) =>
      setError(err instanceof ApiError ? err.detail : 'the download failed'),
    );
  const previewed = message.attachments.find((a) => a.attachment_id === shown);
  return (
    <section className="attachments" aria-label="Attachments">
      <h2>Attachments</h2>
      <ul>
        {message.attachments.map((a) => (
          <li key={a.attachment_id}>
            <button type="button" onClick={() => void fetchOne(a.attachment_id, a.filename)}>
              Download {a.filename}
            </button>{' '}
            {previewable(a) && (
              <button type="button" aria-expanded={shown === a.attachment_id} onClick={() => setShown((s) => (s === a.attachment_id ? null : a.attachment_id))}>
                Preview {a.filename}
              </button>
            )}{' '}
            <span className="muted">{a.content_type}, {bytes(a.size)}</span>
          </li>
        ))}
      </ul>
      {previewed && <AttachmentPreview key={previewed.attachment_id} messageId={message.message_id} attachment={previewed} />}
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}

function ThreadList({ messageId }: { messageId: string }) {
  const thread = useThread(messageId);
  if (!thread.data || thread.data.messages.length < 2) return null;
  return (
    <section className="thread" aria-label="Conversation">
      <h2>Conversation ({thread.data.message_count} messages)</h2>
      <ol>
        {thread.data.messages.map((m) => (
          <li key={m.message_id} className={m.message_id === messageId ? 'current' : m.read ? '' : 'unread'}>
            {m.message_id === messageId ? (
              <span aria-current="true"><strong>{person(m.from)}</strong> · {longDate(m.date ?? m.created_at)} (this message)</span>
            ) : (
              <a href={mailPath(m.mailbox, m.folder, m.message_id)} onClick={(e) => { e.preventDefault(); navigate(mailPath(m.mailbox, m.folder, m.message_id)); }}>
                <strong>{person(m.from)}</strong> · {longDate(m.date ?? m.created_at)} — {m.snippet}
              </a>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}

export function MessageView({ messageId, onBack }: { messageId: string; onBack: () => void }) {
  const client = useQueryClient();
  const message = useMessage(messageId);
  const loaded = message.data?.message_id;
  const [original, setOriginal] = useState(false);
  // Opening marks the message read (mark_read): refresh the counts and the list once it is loaded.
  useEffect(() => {
    if (loaded) void invalidateMail(client);
  }, [loaded, client]);
  if (message.isPending) return <p className="loading" role="status">Loading message…</p>;
  if (message.isError) {
    return <p role="alert" className="error">{message.error instanceof ApiError ? message.error.detail : 'the message could not be loaded'}</p>;
  }
  const m = message.data;
  return (
    <article className="message" aria-labelledby="message-subject">
      <Toolbar message={m} onBack={onBack} />
      <h1 id="message-subject">{m.subject || '(no subject)'}</h1>
      <dl className="meta">
        <dt>From</dt>
        <dd>{m.from ? `${m.from.name ? `${m.from.name} ` : ''}<${m.from.address}>` : '(no sender)'}</dd>
        <dt>To</dt>
        <dd>{m.to.map((t) => t.address).join(', ') || '—'}</dd>
        {m.cc.length > 0 && (<><dt>Cc</dt><dd>{m.cc.map((t) => t.address).join(', ')}</dd></>)}
        <dt>Date</dt>
        <dd>{longDate(m.date ?? m.created_at)}</dd>
        <dt>Folder</dt>
        <dd>{m.folder}</dd>
      </dl>
      {m.direction === 'inbound' && <AuthBadge message={m} />}
      <Labels key={m.labels.join(',')} message={m} />
      <button type="button" className="link" aria-expanded={original} onClick={() => setOriginal((v) => !v)}>
        {original ? 'Hide original' : 'Show original'}
      </button>
      {original ? <Original message={m} /> : <MessageBody message={m} />}
      <Attachments message={m} />
      {m.direction === 'outbound' && <Delivery message={m} />}
      <ThreadList messageId={messageId} />
    </article>
  );
}

