// Where the session token lives (decision 240): sessionStorage, so a reload keeps the user logged in while each tab
// logs in on its own and the token ends with the tab. Message content never runs in this origin (sandboxed
// iframe with an opaque origin), so nothing it carries can read it.
const KEY = 'mailroom.session';

export function loadToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function saveToken(token: string | null): void {
  try {
    if (token === null) sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, token);
  } catch {
    // Storage can be off (private modes); the token then lives until the page closes.
  }
}
