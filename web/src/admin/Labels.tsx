import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { answerOf, client as api } from '../api';
import { DEFAULT_LABEL_COLOUR, labelsQuery } from '../queries';
import type { Schema } from '../types';
import { ErrorNote, Section } from './common';

type Label = Schema<'LabelList'>['labels'][number];

/** The workspace's labels: a colour each (shown in the sidebar and on messages), and delete (off every message). */
export function Labels() {
  const labels = useQuery(labelsQuery());
  const list = labels.data?.labels ?? [];
  return (
    <Section title="Labels" intro="Labels come from the messages that carry them. Give one a colour, or delete it from every message.">
      <ErrorNote error={labels.error} />
      {labels.data && list.length === 0 && <p className="muted">No labels yet: add one to a message, or below.</p>}
      {list.length > 0 && (
        <table className="admin-table" aria-label="Labels">
          <thead>
            <tr><th scope="col">Label</th><th scope="col">Messages</th><th scope="col">Unread</th><th scope="col">Colour</th><th scope="col"><span className="visually-hidden">Delete</span></th></tr>
          </thead>
          <tbody>
            {list.map((l) => <LabelRow key={`${l.name}:${l.colour ?? ''}`} label={l} cap={labels.data?.count_cap ?? 0} />)}
          </tbody>
        </table>
      )}
      <NewLabel />
    </Section>
  );
}

function useRefresh() {
  const client = useQueryClient();
  return () => client.invalidateQueries({ queryKey: ['messages'] });
}

function LabelRow({ label, cap }: { label: Label; cap: number }) {
  const refresh = useRefresh();
  const [colour, setColour] = useState(label.colour ?? DEFAULT_LABEL_COLOUR);
  const save = useMutation({
    mutationFn: () => answerOf(api.PUT('/app/api/labels/{name}', { params: { path: { name: label.name } }, body: { colour } })),
    onSuccess: refresh,
  });
  const remove = useMutation({
    // The server takes the label off at most 1000 messages a call: call again while it says more are left.
    mutationFn: async () => {
      for (;;) {
        const answer = await answerOf(api.DELETE('/app/api/labels/{name}', { params: { path: { name: label.name } } }));
        if (!answer.remaining) return;
      }
    },
    onSettled: refresh,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <tr>
      <th scope="row"><span className="label-dot" aria-hidden="true" style={{ background: label.colour ?? DEFAULT_LABEL_COLOUR }} />{label.name}</th>
      <td>{label.messages >= cap ? `${cap}+` : label.messages}</td>
      <td>{label.unread}</td>
      <td>
        <form className="inline" onSubmit={submit}>
          <input type="color" aria-label={`Colour of ${label.name}`} value={colour} onChange={(e) => setColour(e.target.value)} />
          <button type="submit" disabled={save.isPending}>Save colour<span className="visually-hidden"> of {label.name}</span></button>
        </form>
        <ErrorNote error={save.error} />
      </td>
      <td>
        <button type="button" className="danger" disabled={remove.isPending}
          onClick={() => { if (window.confirm(`Delete the label ${label.name} from every message?`)) remove.mutate(); }}>
          Delete<span className="visually-hidden"> {label.name}</span>
        </button>
        <ErrorNote error={remove.error} />
      </td>
    </tr>
  );
}

/** A label given a colour before any message carries it. */
function NewLabel() {
  const refresh = useRefresh();
  const [name, setName] = useState('');
  const [colour, setColour] = useState('#2563eb');
  const add = useMutation({
    mutationFn: () => answerOf(api.PUT('/app/api/labels/{name}', { params: { path: { name: name.trim().toLowerCase() } }, body: { colour } })),
    onSuccess: async () => {
      setName('');
      await refresh();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (name.trim()) add.mutate();
  };
  return (
    <form className="inline" onSubmit={submit}>
      <label htmlFor="new-label">New label</label>
      <input id="new-label" value={name} onChange={(e) => setName(e.target.value)} pattern="[a-zA-Z0-9_.:\-]{1,64}" />
      <input type="color" aria-label="Colour of the new label" value={colour} onChange={(e) => setColour(e.target.value)} />
      <button type="submit" disabled={add.isPending}>Add label</button>
      <ErrorNote error={add.error} />
    </form>
  );
}
