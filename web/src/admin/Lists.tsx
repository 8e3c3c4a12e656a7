import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api } from '../api';
import { ErrorNote, Section, when } from './common';
import type { ListEntry } from './types';

type Direction = ListEntry['direction'];
type ListType = ListEntry['list_type'];
/** Entries shown at once: the API's largest page (docs/api.md, Pagination); the caption says when there are more. */
const LIST_LIMIT = 500;

function EntryRow({ entry, path }: { entry: ListEntry; path: string }) {
  const client = useQueryClient();
  const remove = useMutation({
    mutationFn: () => api(`${path}/${encodeURIComponent(entry.entry)}`, { method: 'DELETE' }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['lists'] }),
  });
  return (
    <tr>
      <td>{entry.entry}</td>
      <td>{entry.kind}</td>
      <td>{entry.reason ?? ''}</td>
      <td>{when(entry.created_at)}</td>
      <td>
        <button type="button" className="danger" onClick={() => remove.mutate()} aria-label={`Remove ${entry.entry}`}>Remove</button>
        <ErrorNote error={remove.error} />
      </td>
    </tr>
  );
}

export function Lists() {
  const client = useQueryClient();
  const [direction, setDirection] = useState<Direction>('inbound');
  const [listType, setListType] = useState<ListType>('block');
  const [entry, setEntry] = useState('');
  const [reason, setReason] = useState('');
  const path = `/lists/${direction}/${listType}`;
  const list = useQuery({
    queryKey: ['lists', direction, listType],
    queryFn: () => api<{ entries: ListEntry[]; total: number }>(path, { query: { limit: LIST_LIMIT } }),
  });
  const add = useMutation({
    mutationFn: () => api<ListEntry>(path, { method: 'POST', body: { entry: entry.trim(), ...(reason.trim() ? { reason: reason.trim() } : {}) } }),
    onSuccess: () => {
      setEntry('');
      setReason('');
      void client.invalidateQueries({ queryKey: ['lists'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  const name = `${direction} ${listType} list`;
  return (
    <Section title="Allow and block lists" intro="Inbound lists apply to senders (address, domain, IP or CIDR); outbound lists to recipients. An allow match wins over a block.">
      <div className="inline">
        <label htmlFor="list-direction">Direction</label>
        <select id="list-direction" value={direction} onChange={(e) => setDirection(e.target.value as Direction)}>
          <option value="inbound">Inbound (senders)</option>
          <option value="outbound">Outbound (recipients)</option>
        </select>
        <label htmlFor="list-type">List</label>
        <select id="list-type" value={listType} onChange={(e) => setListType(e.target.value as ListType)}>
          <option value="block">Block</option>
          <option value="allow">Allow</option>
        </select>
      </div>
      <form className="admin-form" onSubmit={submit}>
        <h2>Add to the {name}</h2>
        <label htmlFor="list-entry">Entry</label>
        <input id="list-entry" required value={entry} onChange={(e) => setEntry(e.target.value)} placeholder={direction === 'inbound' ? 'spammer@bad.example, bad.example or 203.0.113.0/24' : 'someone@example.com or example.com'} />
        <label htmlFor="list-reason">Reason (optional)</label>
        <input id="list-reason" value={reason} onChange={(e) => setReason(e.target.value)} maxLength={500} />
        <button type="submit" className="primary" disabled={add.isPending}>Add entry</button>
        <ErrorNote error={add.error} />
      </form>
      <ErrorNote error={list.error} />
      {list.data?.entries.length === 0 && <p className="muted">The {name} is empty.</p>}
      {list.data && list.data.entries.length > 0 && (
        <table className="admin-table">
          <caption>{list.data.total} on the {name}{list.data.total > list.data.entries.length ? `, the newest ${list.data.entries.length} shown` : ''}</caption>
          <thead><tr><th scope="col">Entry</th><th scope="col">Kind</th><th scope="col">Reason</th><th scope="col">Added</th><th scope="col">Remove</th></tr></thead>
          <tbody>{list.data.entries.map((x) => <EntryRow key={x.entry} entry={x} path={path} />)}</tbody>
        </table>
      )}
    </Section>
  );
}
