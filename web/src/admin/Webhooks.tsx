import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { webhookDeliveriesQuery, webhooksQuery } from '../queries';
import { ConfirmButton, CreateForm, ErrorNote, OnceSecret, Section, when } from './common';
import { EVENT_TYPES, type EventType, type Webhook } from './types';

const KEY = webhooksQuery().queryKey;
/** How often an open delivery log looks for new attempts (a test event lands within a second or two). */
const DELIVERY_POLL_MS = 2000;

function EventFilter({ value, onChange }: { value: EventType[]; onChange: (v: EventType[]) => void }) {
  return (
    <fieldset className="event-filter">
      <legend>Events (none ticked: every event)</legend>
      {EVENT_TYPES.map((t) => (
        <label key={t} className="check">
          <input type="checkbox" checked={value.includes(t)} onChange={(e) => onChange(e.target.checked ? [...value, t] : value.filter((x) => x !== t))} />
          {t}
        </label>
      ))}
    </fieldset>
  );
}

/** The path parameters of one endpoint's routes. */
const paramsOf = (webhook: Webhook) => ({ path: { webhook_id: webhook.webhook_id } });
/** Most recover calls one click follows (each examines up to 5000 events; docs/api.md). */
const MAX_RECOVER_CALLS = 100;

function DeliveryLog({ webhook }: { webhook: Webhook }) {
  const client = useQueryClient();
  const replay = useMutation({
    mutationFn: (eventId: string) =>
      answerOf(api.POST('/app/api/webhooks/{webhook_id}/deliveries/{event_id}/replay', { params: { path: { webhook_id: webhook.webhook_id, event_id: eventId } } })),
    onSuccess: () => void client.invalidateQueries({ queryKey: webhookDeliveriesQuery(webhook.webhook_id).queryKey }),
  });
  const log = useQuery({ ...webhookDeliveriesQuery(webhook.webhook_id), refetchInterval: DELIVERY_POLL_MS });
  return (
    <section className="deliveries" aria-label={`Deliveries to ${webhook.url}`}>
      <h4>Delivery log (newest first)</h4>
      <ErrorNote error={log.error ?? replay.error} />
      {replay.isSuccess && <p role="status">Event {replay.data.event_id} queued again.</p>}
      {log.data?.deliveries.length === 0 && <p className="muted">No delivery attempts yet.</p>}
      {log.data && log.data.deliveries.length > 0 && (
        <table className="admin-table">
          <caption className="visually-hidden">Delivery attempts to {webhook.url}</caption>
          <thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Attempt</th><th scope="col">Status</th><th scope="col">Error</th><th scope="col">Time</th><th scope="col"><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {log.data.deliveries.map((d) => (
              <tr key={d.delivery_id} className={d.success ? 'ok' : 'failed'}>
                <td>{when(d.delivered_at)}</td>
                <td>{d.event_type} <code className="muted">{d.event_id}</code></td>
                <td>{d.attempt}</td>
                <td>{d.status_code ?? 'no answer'} {d.success ? '(delivered)' : '(failed)'}</td>
                <td>{d.error ?? ''}</td>
                <td>{d.duration_ms} ms</td>
                <td>
                  <button type="button" aria-label={`Replay ${d.event_id}`} onClick={() => replay.mutate(d.event_id)} disabled={replay.isPending || !webhook.active}>Replay</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** An hour ago, as a datetime-local input's value (local time, minutes). */
function anHourAgo(): string {
  const d = new Date(Date.now() - 3_600_000);
  d.setMinutes(d.getMinutes() - d.getTimezoneOffset());
  return d.toISOString().slice(0, 16);
}

/** Recover: queue again what the endpoint missed since a time, following the server's walk to its end. */
function Recover({ webhook, onQueued }: { webhook: Webhook; onQueued: () => void }) {
  const [since, setSince] = useState(anHourAgo);
  const recover = useMutation({
    mutationFn: async () => {
      const from = new Date(since).toISOString();
      let queued = 0;
      let before: string | null = null;
      for (let calls = 0; calls < MAX_RECOVER_CALLS; calls++) {
        const body: { since: string; before?: string } = before === null ? { since: from } : { since: from, before };
        const answer = await answerOf(api.POST('/app/api/webhooks/{webhook_id}/recover', { params: paramsOf(webhook), body }));
        queued += answer.queued;
        before = answer.next_before;
        if (before === null) break;
      }
      return queued;
    },
    onSuccess: onQueued,
  });
  const id = webhook.webhook_id;
  return (
    <form className="inline" onSubmit={(e) => { e.preventDefault(); recover.mutate(); }}>
      <label htmlFor={`${id}-since`}>Recover missed events since</label>
      <input id={`${id}-since`} type="datetime-local" required value={since} onChange={(e) => setSince(e.target.value)} />
      <button type="submit" disabled={recover.isPending || !webhook.active}>Recover</button>
      {recover.isSuccess && <p role="status">{recover.data === 0 ? 'Nothing to recover.' : `${recover.data} missed event${recover.data === 1 ? '' : 's'} queued.`}</p>}
      <ErrorNote error={recover.error} />
    </form>
  );
}

function WebhookCard({ webhook }: { webhook: Webhook }) {
  const client = useQueryClient();
  const params = paramsOf(webhook);
  const deliveries = webhookDeliveriesQuery(webhook.webhook_id).queryKey;
  const [testType, setTestType] = useState<EventType>(EVENT_TYPES[0]);
  const [open, setOpen] = useState(false);
  const refresh = () => client.invalidateQueries({ queryKey: KEY });
  // The box shows the asked-for state at once (set in the event handler, so React never puts the old one back),
  // until the list has been fetched again after the change.
  const [asked, setAsked] = useState<boolean | null>(null);
  const toggle = useMutation({
    mutationFn: (active: boolean) => answerOf(api.PATCH('/app/api/webhooks/{webhook_id}', { params, body: { active } })),
    onSettled: async () => {
      await refresh();
      setAsked(null);
    },
  });
  const test = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/webhooks/{webhook_id}/test', { params, body: { event_type: testType } })),
    onSuccess: () => {
      setOpen(true);
      void client.invalidateQueries({ queryKey: deliveries });
    },
  });
  const remove = useMutation({ mutationFn: () => answerOf(api.DELETE('/app/api/webhooks/{webhook_id}', { params })), onSuccess: refresh });
  const active = asked ?? webhook.active;
  const id = webhook.webhook_id;
  return (
    <li className="card" aria-labelledby={`${id}-url`}>
      <h3 id={`${id}-url`} className="url">{webhook.url}</h3>
      <p className="muted">Events: {webhook.event_types.length === 0 ? 'all' : webhook.event_types.join(', ')} · created {when(webhook.created_at)}</p>
      {webhook.disabled_reason !== null && (
        <p className="error" role="note">
          Disabled by the service {webhook.disabled_at === null ? '' : when(webhook.disabled_at)}: {webhook.disabled_reason}. Tick Active to turn it back on, then recover what it missed.
        </p>
      )}
      <div className="inline">
        <label className="check">
          <input type="checkbox" checked={active} disabled={toggle.isPending} onChange={(e) => { setAsked(e.target.checked); toggle.mutate(e.target.checked); }} />
          Active
        </label>
        <label htmlFor={`${id}-test`}>Test event</label>
        <select id={`${id}-test`} value={testType} onChange={(e) => setTestType(e.target.value as EventType)}>
          {EVENT_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
        </select>
        <button type="button" onClick={() => test.mutate()} disabled={test.isPending}>Send test event</button>
        <button type="button" aria-expanded={open} onClick={() => setOpen((v) => !v)}>{open ? 'Hide deliveries' : 'Show deliveries'}</button>
        <ConfirmButton label="Delete" name={`Delete ${webhook.url}`} confirm={`Really delete ${webhook.url}`} onConfirm={() => remove.mutate()} />
      </div>
      {test.isSuccess && <p role="status">Test event {test.data.event_id} queued.</p>}
      <ErrorNote error={toggle.error ?? test.error ?? remove.error} />
      <Recover webhook={webhook} onQueued={() => { setOpen(true); void client.invalidateQueries({ queryKey: deliveries }); }} />
      {open && <DeliveryLog webhook={webhook} />}
    </li>
  );
}

export function Webhooks() {
  const client = useQueryClient();
  const list = useQuery(webhooksQuery());
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<EventType[]>([]);
  const [created, setCreated] = useState<Webhook | null>(null);
  const create = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/webhooks', { body: { url: url.trim(), event_types: events } })),
    onSuccess: (w) => {
      setCreated(w);
      setUrl('');
      setEvents([]);
      void client.invalidateQueries({ queryKey: KEY });
    },
  });
  return (
    <Section title="Webhooks" intro="Endpoints that receive this workspace's events, signed per Standard Webhooks.">
      {created?.secret && <OnceSecret id="new-secret" title="Signing secret" value={created.secret} onDone={() => setCreated(null)} />}
      <CreateForm title="New webhook" action="Create webhook" onSubmit={() => create.mutate()} state={create}>
        <label htmlFor="wh-url">Endpoint URL</label>
        <input id="wh-url" type="url" required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://hooks.example.com/mailroom" />
        <EventFilter value={events} onChange={setEvents} />
      </CreateForm>
      <ErrorNote error={list.error} />
      {list.data?.webhooks.length === 0 && <p className="muted">No webhooks yet.</p>}
      <ul className="cards">{list.data?.webhooks.map((w) => <WebhookCard key={w.webhook_id} webhook={w} />)}</ul>
    </Section>
  );
}
