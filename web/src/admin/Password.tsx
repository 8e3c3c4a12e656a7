import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { CreateForm, Section } from './common';

/** The API's rule for a new password (docs/api.md, POST /app/api/session/password). */
const MIN_PASSWORD = 8;

export function Password() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const change = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/session/password', { body: { current_password: current, new_password: next } })),
    onSuccess: () => {
      setCurrent('');
      setNext('');
      setAgain('');
    },
  });
  const submit = () => {
    setMismatch(next !== again);
    if (next === again) change.mutate();
  };
  const notice = (
    <>
      {mismatch && <p className="error" role="alert">The two new passwords differ.</p>}
      {change.isSuccess && <p role="status">Password changed. {change.data.sessions_ended} other session(s) ended.</p>}
    </>
  );
  return (
    <Section title="Your password" intro="Changing it logs you out everywhere else; this tab stays logged in.">
      <CreateForm action="Change password" onSubmit={submit} state={change} notice={notice}>
        <label htmlFor="pw-current">Current password</label>
        <input id="pw-current" type="password" autoComplete="current-password" required value={current} onChange={(e) => setCurrent(e.target.value)} />
        <label htmlFor="pw-new">New password (at least {MIN_PASSWORD} characters)</label>
        <input id="pw-new" type="password" autoComplete="new-password" required minLength={MIN_PASSWORD} value={next} onChange={(e) => setNext(e.target.value)} />
        <label htmlFor="pw-again">New password again</label>
        <input id="pw-again" type="password" autoComplete="new-password" required minLength={MIN_PASSWORD} value={again} onChange={(e) => setAgain(e.target.value)} />
      </CreateForm>
    </Section>
  );
}
