import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { adminMailboxesQuery } from '../queries';
import { CreateForm, ErrorNote, Section } from './common';

export function Mailboxes() {
  const client = useQueryClient();
  const list = useQuery(adminMailboxesQuery());
  const [address, setAddress] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/mailboxes', { body: { address: address.trim(), ...(description.trim() ? { description: description.trim() } : {}) } })),
    onSuccess: () => {
      setAddress('');
      setDescription('');
      void client.invalidateQueries({ queryKey: adminMailboxesQuery().queryKey });
      void client.invalidateQueries({ queryKey: ['mailboxes'] });
    },
  });
  return (
    <Section title="Mailboxes" intro="Addresses that receive mail in this workspace. A mailbox at your own domain needs that domain verified first.">
      <CreateForm title="New mailbox" action="Create mailbox" onSubmit={() => create.mutate()} state={create}>
        <label htmlFor="mb-address">Address</label>
        <input id="mb-address" type="email" required value={address} onChange={(e) => setAddress(e.target.value)} placeholder="team@example.com" />
        <label htmlFor="mb-description">Description (optional)</label>
        <input id="mb-description" value={description} onChange={(e) => setDescription(e.target.value)} />
      </CreateForm>
      <ErrorNote error={list.error} />
      {list.data && (
        <table className="admin-table">
          <caption className="visually-hidden">Mailboxes</caption>
          <thead><tr><th scope="col">Address</th><th scope="col">Description</th><th scope="col">Messages</th><th scope="col">Unread</th></tr></thead>
          <tbody>
            {list.data.mailboxes.map((m) => (
              <tr key={m.address}><td>{m.address}</td><td>{m.description ?? ''}</td><td>{m.message_count}</td><td>{m.unread_count}</td></tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data?.mailboxes.length === 0 && <p className="muted">No mailboxes yet.</p>}
    </Section>
  );
}
