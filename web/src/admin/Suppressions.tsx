import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { suppressionsQuery } from '../queries';
import { CreateForm, ErrorNote, Section, when } from './common';
import type { Suppression } from './types';

type Reason = Suppression['reason'];
const REASONS: Record<Reason, string> = { hard_bounce: 'Hard bounce', complaint: 'Complaint', manual: 'Added by hand', unsubscribed: 'Unsubscribed' };

function SuppressionRow({ entry }: { entry: Suppression }) {
  const client = useQueryClient();
  const remove = useMutation({
    mutationFn: () => answerOf(api.DELETE('/app/api/suppressions/{address}', { params: { path: { address: entry.address } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ['suppressions'] }),
  });
  return (
    <tr>
      <td>{entry.address}</td>
      <td>{REASONS[entry.reason]}</td>
      <td>{entry.status_code ?? ''}</td>
      <td>{entry.detail ?? ''}</td>
      <td>{when(entry.created_at)}</td>
      <td>
        <button type="button" className="danger" onClick={() => remove.mutate()} aria-label={`Remove ${entry.address}`}>Remove</button>
        <ErrorNote error={remove.error} />
      </td>
    </tr>
  );
}

/** The workspace's suppression list: what bounced hard or complained, and addresses added by hand. */
export function Suppressions() {
  const client = useQueryClient();
  const [reason, setReason] = useState<Reason | ''>('');
  const [address, setAddress] = useState('');
  const [detail, setDetail] = useState('');
  const list = useQuery(suppressionsQuery(reason));
  const add = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/suppressions', { body: { address: address.trim(), ...(detail.trim() ? { detail: detail.trim() } : {}) } })),
    onSuccess: () => {
      setAddress('');
      setDetail('');
      void client.invalidateQueries({ queryKey: ['suppressions'] });
    },
  });
  return (
    <Section title="Suppressions" intro="Addresses this workspace no longer sends to: a hard bounce or a complaint adds them. A send to one of them leaves it out (or is refused when it is the only recipient). Remove an address to send to it again.">
      <div className="inline">
        <label htmlFor="suppression-reason">Show</label>
        <select id="suppression-reason" value={reason} onChange={(e) => setReason(e.target.value as Reason | '')}>
          <option value="">Every reason</option>
          <option value="hard_bounce">Hard bounces</option>
          <option value="complaint">Complaints</option>
          <option value="manual">Added by hand</option>
        </select>
      </div>
      <CreateForm title="Suppress an address" action="Suppress" onSubmit={() => add.mutate()} state={add}>
        <label htmlFor="suppression-address">Address</label>
        <input id="suppression-address" type="email" required value={address} onChange={(e) => setAddress(e.target.value)} placeholder="someone@example.com" />
        <label htmlFor="suppression-detail">Note (optional)</label>
        <input id="suppression-detail" value={detail} onChange={(e) => setDetail(e.target.value)} maxLength={500} />
      </CreateForm>
      <ErrorNote error={list.error} />
      {list.data?.suppressions.length === 0 && <p className="muted">No address is suppressed{reason ? ` for this reason` : ''}.</p>}
      {list.data && list.data.suppressions.length > 0 && (
        <table className="admin-table">
          <caption>{list.data.total} suppressed{list.data.total > list.data.suppressions.length ? `, the newest ${list.data.suppressions.length} shown` : ''}</caption>
          <thead><tr><th scope="col">Address</th><th scope="col">Reason</th><th scope="col">Status</th><th scope="col">Detail</th><th scope="col">Added</th><th scope="col">Remove</th></tr></thead>
          <tbody>{list.data.suppressions.map((x) => <SuppressionRow key={x.address} entry={x} />)}</tbody>
        </table>
      )}
    </Section>
  );
}
