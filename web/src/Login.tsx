import { useState, type FormEvent } from 'react';
import { ApiError, KEEP_SESSION, answerOf, client } from './api';
import type { SessionInfo } from './types';

export function Login({ onLoggedIn }: { onLoggedIn: (info: SessionInfo, token: string) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { session_token, ...info } = await answerOf(client.POST('/app/api/login', { body: { email, password }, ...KEEP_SESSION }));
      onLoggedIn(info, session_token);
    } catch (err) {
      setError(err instanceof ApiError ? err.detail : 'the server did not answer; try again');
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="login">
      <form onSubmit={(e) => void submit(e)} aria-labelledby="login-title">
        <h1 id="login-title">Mailroom</h1>
        <p className="muted">Log in to read your workspace's mail.</p>
        <label htmlFor="login-email">Email</label>
        <input id="login-email" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />
        <label htmlFor="login-password">Password</label>
        <input id="login-password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        {error !== null && <p className="error" role="alert">{error}</p>}
        <button type="submit" className="primary" disabled={busy}>{busy ? 'Logging in…' : 'Log in'}</button>
      </form>
    </main>
  );
}
