import { useMutation, useQueryClient, type QueryKey } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { ConfirmButton, CreateForm, ErrorNote, OnceSecret, when } from './common';

/** What every listed credential has (never its secret); one revoked and still listed says when in place of its button. */
interface Listed {
  created_at: string;
  last_used_at: string | null;
  revoked_at?: string | null;
}

export interface CredentialsProps<T extends Listed> {
  /** The list's query, read again after a create or a revoke. */
  queryKey: QueryKey;
  /** The form: its heading, button and fields; `onCreated` clears the fields. */
  title: string;
  action: string;
  fields: ReactNode;
  disabled?: boolean;
  create: () => Promise<T>;
  onCreated: () => void;
  /** The secret of the one just made, shown this once (its field's id and title; no value, nothing shown). */
  secret: (made: T) => { id: string; title: string; value: string | undefined };
  /** Shown between the form and the list. */
  beforeList?: ReactNode;
  items: readonly T[] | undefined;
  error: unknown;
  empty: string;
  caption: string;
  /** The page's own columns and their cells; Created, Last used and `lastColumn` (the revoke) follow. */
  columns: readonly string[];
  cells: (item: T) => ReactNode;
  lastColumn: string;
  rowKey: (item: T) => string;
  /** What a row's Revoke button names. */
  label: (item: T) => string;
  revoke: (item: T) => Promise<unknown>;
}

function CredentialRow<T extends Listed>({ item, props }: { item: T; props: CredentialsProps<T> }) {
  const client = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => props.revoke(item),
    onSuccess: () => client.invalidateQueries({ queryKey: props.queryKey }),
  });
  const label = props.label(item);
  return (
    <tr>
      {props.cells(item)}
      <td>{when(item.created_at)}</td>
      <td>{when(item.last_used_at)}</td>
      <td className="actions">
        {item.revoked_at ? `Revoked ${when(item.revoked_at)}` : <ConfirmButton label="Revoke" name={`Revoke ${label}`} confirm={`Really revoke ${label}`} onConfirm={() => revoke.mutate()} />}
        <ErrorNote error={revoke.error} />
      </td>
    </tr>
  );
}

/** Credentials whose secret is shown once (API keys, app passwords): the one just made, the form, the list with revokes. */
export function Credentials<T extends Listed>(props: CredentialsProps<T>) {
  const { queryKey, items } = props;
  const client = useQueryClient();
  const [created, setCreated] = useState<T | null>(null);
  const create = useMutation({
    mutationFn: () => props.create(),
    onSuccess: (made) => {
      setCreated(made);
      props.onCreated();
      void client.invalidateQueries({ queryKey });
    },
  });
  const shown = created ? props.secret(created) : null;
  return (
    <>
      {shown?.value && <OnceSecret id={shown.id} title={shown.title} value={shown.value} onDone={() => setCreated(null)} />}
      <CreateForm title={props.title} action={props.action} onSubmit={() => create.mutate()} state={create} disabled={props.disabled}>
        {props.fields}
      </CreateForm>
      {props.beforeList}
      <ErrorNote error={props.error} />
      {items?.length === 0 && <p className="muted">{props.empty}</p>}
      {items && items.length > 0 && (
        <table className="admin-table">
          <caption className="visually-hidden">{props.caption}</caption>
          <thead><tr>{[...props.columns, 'Created', 'Last used', props.lastColumn].map((c) => <th key={c} scope="col">{c}</th>)}</tr></thead>
          <tbody>{items.map((item) => <CredentialRow key={props.rowKey(item)} item={item} props={props} />)}</tbody>
        </table>
      )}
    </>
  );
}
