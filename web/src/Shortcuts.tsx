import { useEffect, useRef } from 'react';

export interface ShortcutActions {
  next: () => void;
  previous: () => void;
  open: () => void;
  archive: () => void;
  trash: () => void;
  search: () => void;
  help: () => void;
  back: () => void;
  compose: () => void;
  reply: () => void;
  replyAll: () => void;
  forward: () => void;
}

/** Gmail's keys; a key typed into a field or with a modifier is the field's, not a shortcut. */
const KEYS: Record<string, keyof ShortcutActions> = {
  j: 'next',
  k: 'previous',
  o: 'open',
  Enter: 'open',
  e: 'archive',
  '#': 'trash',
  '/': 'search',
  '?': 'help',
  Escape: 'back',
  u: 'back',
  c: 'compose',
  r: 'reply',
  a: 'replyAll',
  f: 'forward',
};

export const SHORTCUT_LIST: Array<[string, string]> = [
  ['j / k', 'next / previous message'],
  ['o or Enter', 'open the message'],
  ['u or Esc', 'back to the list'],
  ['e', 'archive'],
  ['#', 'move to trash'],
  ['c', 'compose a new message'],
  ['r / a / f', 'reply / reply to all / forward'],
  ['Ctrl+Enter', 'send (while writing)'],
  ['/', 'search'],
  ['?', 'this list'],
];

function typing(target: EventTarget | null): boolean {
  return target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));
}

export function useShortcuts(actions: ShortcutActions): void {
  const latest = useRef(actions);
  useEffect(() => {
    latest.current = actions;
  });
  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
      if (typing(event.target)) {
        if (event.key === 'Escape' && event.target instanceof HTMLElement) event.target.blur();
        return;
      }
      const name = KEYS[event.key];
      // Enter on a link or button is that control's own.
      if (name === undefined || (event.key === 'Enter' && event.target instanceof HTMLElement && event.target.closest('a,button'))) return;
      event.preventDefault();
      latest.current[name]();
    }
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
}

export function Shortcuts({ open, onClose }: { open: boolean; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = dialog.current;
    if (d === null) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={dialog} className="shortcuts" aria-labelledby="shortcuts-title" onClose={onClose}>
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <dl>
        {SHORTCUT_LIST.map(([key, what]) => (
          <div key={key}>
            <dt><kbd>{key}</kbd></dt>
            <dd>{what}</dd>
          </div>
        ))}
      </dl>
      <button type="button" onClick={onClose} autoFocus>Close</button>
    </dialog>
  );
}
