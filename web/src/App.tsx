import { useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useCallback, useEffect, useState } from 'react';
import { ApiError, whenUnauthorized } from './api';
import { Login } from './Login';
import { Mail } from './Mail';
import { sessionQuery } from './queries';
import { navigate, useRoute } from './router';
import { loadToken, saveToken } from './session';

// The settings pages are a chunk of their own: the inbox's first load does not carry them.
const Admin = lazy(() => import('./admin/Admin').then((m) => ({ default: m.Admin })));

export function App() {
  const route = useRoute();
  const client = useQueryClient();
  const [token, setToken] = useState<string | null>(loadToken);

  const signOut = useCallback(() => {
    saveToken(null);
    setToken(null);
    client.clear();
    navigate('/login', { replace: true });
  }, [client]);

  useEffect(() => whenUnauthorized(signOut), [signOut]);

  const session = useQuery(sessionQuery(token));

  useEffect(() => {
    if (token === null && route.page !== 'login') navigate('/login', { replace: true });
    if (token !== null && route.page === 'login') navigate('/', { replace: true });
  }, [token, route.page]);

  if (token === null || route.page === 'login') {
    return (
      <Login
        onLoggedIn={(info, newToken) => {
          saveToken(newToken);
          client.setQueryData(sessionQuery(newToken).queryKey, info);
          setToken(newToken);
          navigate('/', { replace: true });
        }}
      />
    );
  }
  if (session.isPending) return <p className="loading" role="status">Loading…</p>;
  if (session.isError) {
    const detail = session.error instanceof ApiError ? session.error.detail : 'the server did not answer';
    return (
      <main className="center">
        <p role="alert">Could not load your session: {detail}</p>
        <button type="button" onClick={signOut}>Log in again</button>
      </main>
    );
  }
  if (route.page === 'not-found') {
    return (
      <main className="center">
        <h1>Page not found</h1>
        <p>Nothing lives at {route.path}.</p>
        <a href="/" onClick={(e) => { e.preventDefault(); navigate('/'); }}>Go to your mail</a>
      </main>
    );
  }
  if (route.page === 'admin') {
    return (
      <Suspense fallback={<p className="loading" role="status">Loading…</p>}>
        <Admin session={session.data} section={route.section} onLogout={signOut} />
      </Suspense>
    );
  }
  return <Mail session={session.data} route={route} onLogout={signOut} />;
}
