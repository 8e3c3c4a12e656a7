import { useState, type FormEvent, type ReactNode } from 'react';
import { ApiError } from '../api';
import type { SessionInfo } from '../types';
import type { Role } from './types';

/** The user's role in the active workspace; null without one. */
export function roleOf(session: SessionInfo): Role | null {
  return session.workspaces.find((w) => w.workspace_id === session.active_workspace_id)?.role ?? null;
}

export const isManager = (role: Role | null): boolean => role === 'owner' || role === 'admin';

export function errorText(error: unknown): string {
  if (error instanceof ApiError) return `${error.detail} (${error.status} ${error.code})`;
  return 'the server did not answer; try again';
}

/** An API error shown where it happened (a 403 for a page the role may not use, a 409 last owner, …). */
export function ErrorNote({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return <p className="error" role="alert">{errorText(error)}</p>;
}

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** A button that copies `text`; it says whether it worked, since clipboards can be refused. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <>
      <button type="button" aria-label={label} onClick={() => void copyText(text).then((ok) => setState(ok ? 'copied' : 'failed'))}>
        Copy
      </button>
      <span className="copy-state" role="status">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy refused: select the text and copy it' : ''}
      </span>
    </>
  );
}

/** A value shown copy-ready: read-only, selectable, with its copy button. */
export function CopyField({ label, value, id }: { label: string; value: string; id: string }) {
  return (
    <div className="copy-field">
      <label htmlFor={id}>{label}</label>
      <div className="inline">
        <input id={id} readOnly value={value} onFocus={(e) => e.target.select()} spellCheck={false} />
        <CopyButton text={value} label={`Copy ${label.toLowerCase()}`} />
      </div>
    </div>
  );
}

/** A credential the API shows this once: copy it now, it is stored hashed and no later answer has it. */
export function OnceSecret({ title, value, id, onDone }: { title: string; value: string; id: string; onDone: () => void }) {
  return (
    <section className="once-secret" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{title}</h3>
      <p className="warning">Copy it now. It is shown this once and cannot be shown again.</p>
      <CopyField label={title} value={value} id={id} />
      <button type="button" onClick={onDone}>I have copied it</button>
    </section>
  );
}

/** A destructive button that asks once more in place (no browser dialog). */
export function ConfirmButton(props: { label: string; name?: string; confirm: string; onConfirm: () => void; disabled?: boolean }) {
  const { label, name, confirm, onConfirm, disabled } = props;
  const [asking, setAsking] = useState(false);
  if (!asking) {
    // `name` tells apart the rows' buttons for screen readers ("Revoke CI deploys", not five "Revoke").
    return <button type="button" className="danger" disabled={disabled} aria-label={name} onClick={() => setAsking(true)}>{label}</button>;
  }
  return (
    <span className="inline">
      <button type="button" className="danger" onClick={() => { setAsking(false); onConfirm(); }}>{confirm}</button>
      <button type="button" onClick={() => setAsking(false)}>Cancel</button>
    </span>
  );
}

/**
 * The form of an admin page that makes something (a mailbox, a key, a member…): its heading, its fields, one submit
 * button, then what the last try gave (`notice`) and its error. `onSubmit` runs instead of the browser's submission.
 */
export function CreateForm(props: {
  title?: string;
  action: string;
  onSubmit: () => void;
  /** The request under way and its error (a TanStack mutation). */
  state: { isPending: boolean; error: unknown };
  /** The submit button is off (besides while the request is under way). */
  disabled?: boolean;
  notice?: ReactNode;
  children: ReactNode;
}) {
  const { title, action, onSubmit, state, disabled = false, notice, children } = props;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit();
  };
  return (
    <form className="admin-form" onSubmit={submit}>
      {title !== undefined && <h2>{title}</h2>}
      {children}
      <button type="submit" className="primary" disabled={state.isPending || disabled}>{action}</button>
      {notice}
      <ErrorNote error={state.error} />
    </form>
  );
}

export function Section({ title, children, intro }: { title: string; intro?: ReactNode; children: ReactNode }) {
  return (
    <section className="admin-section" aria-labelledby="admin-title">
      <h1 id="admin-title">{title}</h1>
      {intro && <p className="muted">{intro}</p>}
      {children}
    </section>
  );
}

export function when(iso: string | null, none = 'never'): string {
  return iso === null ? none : new Date(iso).toLocaleString();
}
