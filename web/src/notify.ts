import { useSyncExternalStore } from 'react';
import type { NewMail } from './newmail';

// Desktop notifications of new mail: off until the user turns them on (which asks the browser's permission), kept in
// this browser per user as the conversation setting is. Shown only while the tab is hidden: a visible tab already
// shows the new row, and a notification on top of it would only be noise.

const settingKey = (userId: string) => `mailroom.notifications.${userId}`;
const listeners = new Set<() => void>();

export const notificationsSupported = (): boolean => typeof window !== 'undefined' && 'Notification' in window;

function changed(): void {
  for (const l of listeners) l();
}

/** 'on' only while both the user's choice and the browser's permission say so. */
export type NotificationState = 'on' | 'off' | 'denied' | 'unsupported';

function currentState(userId: string): NotificationState {
  if (!notificationsSupported()) return 'unsupported';
  if (Notification.permission === 'denied') return 'denied';
  return localStorage.getItem(settingKey(userId)) === 'on' && Notification.permission === 'granted' ? 'on' : 'off';
}

export function useNotificationState(userId: string): NotificationState {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      window.addEventListener('storage', listener);
      return () => {
        listeners.delete(listener);
        window.removeEventListener('storage', listener);
      };
    },
    () => currentState(userId),
  );
}

/** Turn them on: the permission is asked here, on the user's click, never on load. */
export async function enableNotifications(userId: string): Promise<NotificationState> {
  if (!notificationsSupported()) return 'unsupported';
  const permission = Notification.permission === 'granted' ? 'granted' : await Notification.requestPermission();
  if (permission === 'granted') localStorage.setItem(settingKey(userId), 'on');
  changed();
  return currentState(userId);
}

export function disableNotifications(userId: string): void {
  localStorage.setItem(settingKey(userId), 'off');
  changed();
}

/**
 * Show the notification when the user wants them and is not looking at the tab. Sender and subject only: the body
 * stays out of the system's notification centre. A click brings the tab forward and opens the message.
 */
export function notifyNewMail(userId: string, mail: NewMail, open: (mail: NewMail) => void): void {
  if (currentState(userId) !== 'on' || document.visibilityState !== 'hidden') return;
  const note = new Notification(mail.sender, { body: mail.subject, tag: mail.messageId });
  note.onclick = () => {
    window.focus();
    open(mail);
    note.close();
  };
}
