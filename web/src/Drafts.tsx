import { useState } from 'react';
import { ApiError } from './api';
import { shortDate } from './format';
import { composePath, navigate } from './router';
import { deleteDraft, useDrafts, useInvalidateDrafts } from './sending';

/** The drafts of one mailbox, newest first; each opens in the compose form. */
export function Drafts({ mailbox }: { mailbox: string | null }) {
  const drafts = useDrafts(mailbox);
  const refresh = useInvalidateDrafts();
  const [error, setError] = useState<string | null>(null);
  if (drafts.isPending) return <p className="loading" role="status">Loading drafts…</p>;
  if (drafts.isError) return <p role="alert" className="error">{drafts.error instanceof ApiError ? drafts.error.detail : 'the server did not answer'}</p>;
  const remove = (id: string) =>
    deleteDraft(id).then(refresh, (err: unknown) => setError(err instanceof ApiError ? err.detail : 'could not delete it'));
  return (
    <section aria-labelledby="list-title">
      <div className="list-head">
        <h1 id="list-title" className="list-title">Drafts</h1>
        <span className="muted">{drafts.data.total} draft{drafts.data.total === 1 ? '' : 's'}</span>
      </div>
      {error && <p className="error" role="alert">{error}</p>}
      {drafts.data.drafts.length === 0 && <p className="muted empty">No drafts. Press c to write a message.</p>}
      <ul className="messages drafts-list" aria-label="Drafts">
        {drafts.data.drafts.map((d) => {
          const subject = d.subject || '(no subject)';
          const to = composePath(d.mailbox, { draftId: d.draft_id });
          return (
            <li key={d.draft_id} className="row draft-row" data-draft-id={d.draft_id}>
              <a href={to} onClick={(e) => { e.preventDefault(); navigate(to); }}>
                <span className="from">To: {d.to.join(', ') || '(no recipient yet)'}</span>
                <span className="subject">{subject}<span className="snippet"> — {d.body.slice(0, 120)}</span></span>
                <time className="date" dateTime={d.updated_at}>{shortDate(d.updated_at)}</time>
              </a>
              <button type="button" className="link" aria-label={`Delete draft ${subject}`} onClick={() => void remove(d.draft_id)}>×</button>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
