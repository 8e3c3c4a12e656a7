import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { retentionQuery } from '../queries';
import { CreateForm, ErrorNote, Section } from './common';
import type { Retention as RetentionView, Role } from './types';

/** The API's bounds for a period (docs/api.md, PATCH /app/api/retention). */
const MAX_DAYS = 3650;

const shown = (days: number | null): string => (days === null ? 'never' : days === 1 ? '1 day' : `${days} days`);

/** One folder's period: a number of days, or never. */
function PeriodField(props: { id: string; folder: string; defaultDays: number | null; value: string; onChange: (v: string) => void; disabled: boolean }) {
  const { id, folder, defaultDays, value, onChange, disabled } = props;
  const never = value === '';
  return (
    <fieldset disabled={disabled}>
      <legend>{folder} (default {shown(defaultDays)})</legend>
      <label className="inline">
        <input type="checkbox" checked={never} onChange={(e) => onChange(e.target.checked ? '' : String(defaultDays ?? 30))} /> Never delete {folder.toLowerCase()}
      </label>
      {!never && (
        <>
          <label htmlFor={id}>{folder}: days after a message&apos;s last change (1–{MAX_DAYS})</label>
          <input id={id} type="number" min={1} max={MAX_DAYS} step={1} required value={value} onChange={(e) => onChange(e.target.value)} />
        </>
      )}
    </fieldset>
  );
}

function RetentionForm({ current, manager }: { current: RetentionView; manager: boolean }) {
  const client = useQueryClient();
  const [trash, setTrash] = useState(current.trash_days === null ? '' : String(current.trash_days));
  const [spam, setSpam] = useState(current.spam_days === null ? '' : String(current.spam_days));
  const save = useMutation({
    mutationFn: () => answerOf(api.PATCH('/app/api/retention', { body: { trash_days: trash === '' ? null : Number(trash), spam_days: spam === '' ? null : Number(spam) } })),
    onSuccess: (answer) => client.setQueryData(retentionQuery().queryKey, answer),
  });
  return (
    <CreateForm title="Trash and spam" action="Save" onSubmit={() => save.mutate()} state={save} disabled={!manager} notice={save.isSuccess && <p role="status">Saved. The next sweep (within minutes) applies it.</p>}>
      {!manager && <p className="muted">Only an owner or admin can change these.</p>}
      <PeriodField id="retention-trash" folder="Trash" defaultDays={current.defaults.trash_days} value={trash} onChange={setTrash} disabled={!manager} />
      <PeriodField id="retention-spam" folder="Spam" defaultDays={current.defaults.spam_days} value={spam} onChange={setSpam} disabled={!manager} />
    </CreateForm>
  );
}

/** How long trash and spam keep messages (owners and admins change it), and the service's own periods. */
export function Retention({ role }: { role: Role | null }) {
  const retention = useQuery(retentionQuery());
  const current = retention.data;
  return (
    <Section title="Retention" intro="Messages in trash and spam are deleted for good once they have been there this long. Other folders are never emptied. A message still being sent, or answered by a draft, is kept.">
      <ErrorNote error={retention.error} />
      {current && (
        <>
          <RetentionForm current={current} manager={role === 'owner' || role === 'admin'} />
          <h2>Kept by the service</h2>
          <table>
            <tbody>
              <tr><th scope="row">Events (stream and webhook replay)</th><td>{shown(current.records.events_days)}</td></tr>
              <tr><th scope="row">Webhook delivery attempts</th><td>{shown(current.records.webhook_attempts_days)}</td></tr>
              <tr><th scope="row">Webhook deliveries given up</th><td>{shown(current.records.dead_jobs_days)}</td></tr>
              <tr><th scope="row">Transactional idempotency keys</th><td>{shown(current.records.idempotency_days)}</td></tr>
            </tbody>
          </table>
        </>
      )}
    </Section>
  );
}
