import { useQuery } from '@tanstack/react-query';
import { useEffect, useState, type KeyboardEvent, type Ref } from 'react';
import { answerOf, client } from './api';
import './rich.css';

// A recipients field with address completion: the ARIA combobox pattern (an input with a listbox popup). The field
// holds a comma-separated list; completion works on the address being typed, the text after the last comma.

type Contact = { address: string; name: string | null };

/** The address being typed: after the last comma, trimmed. */
function typing(value: string): { head: string; word: string } {
  const cut = value.lastIndexOf(',');
  return { head: cut >= 0 ? `${value.slice(0, cut + 1)} ` : '', word: value.slice(cut + 1).trim() };
}

/** A pause after the last key before asking, so a fast typist asks once. */
function useSettled(value: string, ms: number): string {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

export interface AddressFieldProps {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  inputRef?: Ref<HTMLInputElement> | undefined;
  invalid: boolean;
  describedBy: string;
}

export function AddressField({ id, label, value, onChange, inputRef, invalid, describedBy }: AddressFieldProps) {
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const word = useSettled(typing(value).word, 150);
  const found = useQuery({
    queryKey: ['contacts', word.toLowerCase()],
    queryFn: () => answerOf(client.GET('/app/api/contacts', { params: { query: { q: word } } })),
    enabled: open && word.length > 0,
    staleTime: 60_000,
  });
  const options: Contact[] = (found.data?.contacts ?? []).filter((c) => c.address !== word.toLowerCase());
  const shown = open && word.length > 0 && options.length > 0;
  const listId = `${id}-options`;

  function pick(contact: Contact) {
    onChange(`${typing(value).head}${contact.address}, `);
    setOpen(false);
    setActive(-1);
  }

  function onKey(e: KeyboardEvent<HTMLInputElement>) {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      setOpen(true);
      if (options.length > 0) setActive((a) => (e.key === 'ArrowDown' ? (a + 1) % options.length : (a <= 0 ? options.length : a) - 1));
    } else if (e.key === 'Escape' && shown) {
      e.preventDefault();
      setOpen(false);
    } else if ((e.key === 'Enter' || e.key === 'Tab') && shown && active >= 0 && !e.ctrlKey && !e.metaKey) {
      const chosen = options[active];
      if (chosen) {
        e.preventDefault();
        pick(chosen);
      }
    }
  }

  return (
    <div className="field address-field">
      <label htmlFor={id}>{label}</label>
      <div className="combo">
        <input id={id} ref={inputRef} type="text" inputMode="email" autoComplete="off" value={value}
          role="combobox" aria-autocomplete="list" aria-expanded={shown} aria-controls={listId}
          aria-activedescendant={shown && active >= 0 ? `${listId}-${active}` : undefined}
          aria-invalid={invalid} aria-describedby={describedBy}
          onChange={(e) => {
            onChange(e.target.value);
            setOpen(true);
            setActive(-1);
          }}
          onKeyDown={onKey} onBlur={() => setOpen(false)} />
        <ul id={listId} role="listbox" aria-label={`${label} suggestions`} className="combo-options" hidden={!shown}>
          {shown && options.map((c, i) => (
            <li key={c.address} id={`${listId}-${i}`} role="option" aria-selected={i === active}
              // mousedown, not click: the input's blur would close the list first.
              onMouseDown={(e) => {
                e.preventDefault();
                pick(c);
              }}>
              {c.name ? `${c.name} <${c.address}>` : c.address}
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}
