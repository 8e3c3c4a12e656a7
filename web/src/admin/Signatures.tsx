import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useRef, useState, type FormEvent } from 'react';
import { answerOf, client as api } from '../api';
import { adminMailboxesQuery } from '../queries';
import { ErrorNote, Section } from './common';

/** The same editor as the composer's, loaded only on this page. */
const RichEditor = lazy(() => import('../RichEditor'));

const signaturesQuery = { queryKey: ['signatures'], queryFn: () => answerOf(api.GET('/app/api/signatures')) };

/** Each mailbox's signature, which the composer puts under a new message or an answer from it. */
export function Signatures() {
  const mailboxes = useQuery(adminMailboxesQuery());
  const signatures = useQuery(signaturesQuery);
  const [picked, setPicked] = useState<string | null>(null);
  const list = mailboxes.data?.mailboxes ?? [];
  const mailbox = picked ?? list[0]?.address ?? null;
  return (
    <Section title="Signatures" intro="Each mailbox may have a signature: new messages and answers from it start with it.">
      <ErrorNote error={mailboxes.error ?? signatures.error} />
      {list.length === 0 && mailboxes.data && <p className="muted">No mailboxes yet.</p>}
      {mailbox !== null && signatures.data && (
        <>
          <label htmlFor="sig-mailbox">Mailbox</label>{' '}
          <select id="sig-mailbox" value={mailbox} onChange={(e) => setPicked(e.target.value)}>
            {list.map((m) => <option key={m.address} value={m.address}>{m.address}</option>)}
          </select>
          <SignatureForm key={mailbox} mailbox={mailbox} html={signatures.data.signatures.find((s) => s.mailbox === mailbox)?.html ?? ''} />
        </>
      )}
    </Section>
  );
}

function SignatureForm({ mailbox, html }: { mailbox: string; html: string }) {
  const client = useQueryClient();
  const current = useRef(html);
  const save = useMutation({
    mutationFn: () => answerOf(api.PUT('/app/api/signatures/{address}', { params: { path: { address: mailbox } }, body: { html: current.current } })),
    onSuccess: () => void client.invalidateQueries({ queryKey: signaturesQuery.queryKey }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <form className="signature-form" onSubmit={submit}>
      <span id="sig-label" className="label">Signature of {mailbox}</span>
      <Suspense fallback={<p className="loading" role="status">Loading the editor…</p>}>
        <RichEditor initialHtml={html} labelledBy="sig-label" autofocus={false} onChange={(value) => {
          // An emptied editor still holds one empty paragraph: that is no signature.
          current.current = value === '<p></p>' ? '' : value;
        }} />
      </Suspense>
      <button type="submit" className="primary" disabled={save.isPending}>Save signature</button>
      {save.isSuccess && <p role="status">Saved.</p>}
      <ErrorNote error={save.error} />
    </form>
  );
}
