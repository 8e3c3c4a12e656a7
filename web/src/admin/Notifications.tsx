import { disableNotifications, enableNotifications, useNotificationState } from '../notify';
import { Section } from './common';

const SAID: Record<string, string> = {
  on: 'On: a notification names the sender and subject of new mail while this tab is in the background.',
  off: 'Off.',
  denied: 'This browser blocks notifications from this site: allow them in its site settings, then turn them on here.',
  unsupported: 'This browser cannot show desktop notifications.',
};

/** The user's choice of desktop notifications in this browser (notify.ts); the permission is asked on the click. */
export function Notifications({ userId }: { userId: string }) {
  const state = useNotificationState(userId);
  return (
    <Section title="Notifications" intro="Desktop notifications of new mail, for this browser. Spam and mail from your own mailboxes are left out; the message's text never is shown.">
      <label className="notification-toggle">
        <input
          type="checkbox"
          checked={state === 'on'}
          disabled={state === 'unsupported'}
          onChange={(e) => (e.target.checked ? void enableNotifications(userId) : disableNotifications(userId))}
        />{' '}
        Desktop notifications for new mail
      </label>
      <p role="status">{SAID[state]}</p>
    </Section>
  );
}
