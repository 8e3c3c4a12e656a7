import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { listQuery } from '../queries';
import { CreateForm, ErrorNote, Section, when } from './common';
import type { ListEntry } from './types';

type Direction = ListEntry['direction'];
type ListType = ListEntry['list_type'];

function EntryRow({ entry, list }: { entry: ListEntry; list: { direction: Direction; list_type: ListType } }) {
  const client = useQueryClient();
  const remove = useMutation({
    mutationFn: () => answerOf(api.DELETE('/app/api/lists/{direction}/{list_type}/{entry}', { params: { path: { ...list, entry: entry.entry } } })),
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
  const which = { direction, list_type: listType };
  const list = useQuery(listQuery(direction, listType));
  const add = useMutation({
    mutationFn: () =>
      answerOf(api.POST('/app/api/lists/{direction}/{list_type}', { params: { path: which }, body: { entry: entry.trim(), ...(reason.trim() ? { reason: reason.trim() } : {}) } })),
    onSuccess: () => {
      setEntry('');
      setReason('');
      void client.invalidateQueries({ queryKey: ['lists'] });
    },
  });
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
      <CreateForm title={`Add to the ${name}`} action="Add entry" onSubmit={() => add.mutate()} state={add}>
        <label htmlFor="list-entry">Entry</label>
        <input id="list-entry" required value={entry} onChange={(e) => setEntry(e.target.value)} placeholder={direction === 'inbound' ? 'spammer@bad.example, bad.example or 203.0.113.0/24' : 'someone@example.com or example.com'} />
        <label htmlFor="list-reason">Reason (optional)</label>
        <input id="list-reason" value={reason} onChange={(e) => setReason(e.target.value)} maxLength={500} />
      </CreateForm>
      <ErrorNote error={list.error} />
      {list.data?.entries.length === 0 && <p className="muted">The {name} is empty.</p>}
      {list.data && list.data.entries.length > 0 && (
        <table className="admin-table">
          <caption>{list.data.total} on the {name}{list.data.total > list.data.entries.length ? `, the newest ${list.data.entries.length} shown` : ''}</caption>
          <thead><tr><th scope="col">Entry</th><th scope="col">Kind</th><th scope="col">Reason</th><th scope="col">Added</th><th scope="col">Remove</th></tr></thead>
          <tbody>{list.data.entries.map((x) => <EntryRow key={x.entry} entry={x} list={which} />)}</tbody>
        </table>
      )}
    </Section>
  );
}
