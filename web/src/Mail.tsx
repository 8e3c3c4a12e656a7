import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { client as api } from './api';
import { Compose, composeKey } from './Compose';
import { ConversationToggle } from './ConversationList';
import { isThreadId, rowTarget, useConversationSetting, useFolderThreads, useMoveThread } from './conversations';
import { Drafts } from './Drafts';
import { followEvents } from './events';
import { Header } from './Header';
import { BulkList, ConversationBulkList } from './BulkList';
import { MessageView } from './MessageView';
import { newMailOf } from './newmail';
import { notifyNewMail } from './notify';
import { crossPageQuery, invalidateMail, unreadCountQuery, useMailboxes, useMessageAction, useMessagePage } from './queries';
import { composePath, isCross, isList, listPath, mailPath, navigate, type ComposeMode, type Route } from './router';
import { SentList } from './Sent';
import { Shortcuts, useShortcuts } from './Shortcuts';
import { FOLDER_NAMES, Sidebar } from './Sidebar';
import { ThreadView } from './ThreadView';
import { UndoToast } from './UndoToast';
import type { SessionInfo } from './types';

type MailRoute = Extract<Route, { page: 'mail' }>;

/**
 * Keep the list current: every message event refreshes the views it may change; new mail also raises a desktop
 * notification when the user turned them on (notify.ts).
 */
function useLiveMail(workspaceId: string | null, userId: string, ownAddresses: ReadonlySet<string>): boolean {
  const client = useQueryClient();
  const [live, setLive] = useState(false);
  // Read through a ref so a refreshed mailbox list does not reconnect the stream.
  const own = useRef(ownAddresses);
  useEffect(() => {
    own.current = ownAddresses;
  }, [ownAddresses]);
  useEffect(() => {
    if (workspaceId === null) return undefined;
    return followEvents(
      (event) => {
        if (!event.type.startsWith('message.')) return;
        void invalidateMail(client);
        const mail = newMailOf(event, own.current);
        if (mail) notifyNewMail(userId, mail, (m) => navigate(mailPath(m.mailbox, m.folder, m.messageId)));
      },
      setLive,
    );
  }, [workspaceId, userId, client]);
  return live;
}

/** The tab's title names the open folder and, as mail clients do, its unread count first: "(3) Inbox — Mailroom". */
function useTitle(route: MailRoute): void {
  const folder = route.view.kind === 'folder' && !route.q ? route.folder : null;
  const unread = useQuery({ ...unreadCountQuery(route.mailbox, folder ?? 'inbox'), enabled: route.mailbox !== null && folder !== null });
  const count = folder !== null ? (unread.data ?? 0) : 0;
  const name = route.view.kind === 'compose' ? 'Compose' : route.view.kind === 'drafts' ? 'Drafts' : route.view.kind === 'all' ? 'All inboxes'
    : route.view.kind === 'starred' ? 'Starred' : route.view.kind === 'label' ? route.view.label : route.q ? 'Search' : FOLDER_NAMES[route.folder];
  const title = `${count > 0 ? `(${count}) ` : ''}${name} — Mailroom`;
  useEffect(() => {
    document.title = title;
  }, [title]);
}

export function Mail({ session, route, onLogout }: { session: SessionInfo; route: MailRoute; onLogout: () => void }) {
  const workspaceId = session.active_workspace_id;
  const mailboxes = useMailboxes(workspaceId);
  // A folder is shown as conversations unless the user turned them off; a search and the sent list stay per message.
  const grouping = useConversationSetting(session.user.user_id);
  const conversational = grouping && route.folder !== 'sent' && !route.q && route.view.kind === 'folder';
  const cross = isCross(route.view) ? route.view : null;
  const folderPage = useMessagePage(conversational || cross ? null : route.mailbox, route.folder, route.q, route.offset);
  const crossPage = useQuery(crossPageQuery(cross, route.offset));
  const page = cross ? crossPage : folderPage;
  const threads = useFolderThreads(conversational ? route.mailbox : null, route.folder, route.offset);
  const moveThread = useMoveThread();
  const ownAddresses = useMemo(() => new Set((mailboxes.data ?? []).map((m) => m.address.toLowerCase())), [mailboxes.data]);
  const live = useLiveMail(workspaceId, session.user.user_id, ownAddresses);
  useTitle(route);
  const action = useMessageAction();
  // The selection belongs to one list: another folder, search or page starts at its top.
  const listKey = `${route.mailbox ?? ''}|${route.folder}|${route.q}|${route.offset}|${cross?.kind ?? ''}|${cross?.kind === 'label' ? cross.label : ''}`;
  const [selection, setSelection] = useState({ listKey, index: 0 });
  const selected = selection.listKey === listKey ? selection.index : 0;
  const setSelected = (update: (index: number) => number) => setSelection({ listKey, index: update(selected) });
  const [helpOpen, setHelpOpen] = useState(false);
  const searchRef = useRef<HTMLInputElement>(null);
  const messages = page.data?.messages ?? [];
  // What j/k and Enter walk: the rows' targets (a thread of one message opens as that message).
  const items = conversational ? (threads.data?.threads ?? []).map(rowTarget) : messages.map((m) => m.message_id);

  useEffect(() => {
    const first = mailboxes.data?.[0];
    if (route.mailbox === null && route.view.kind === 'folder' && first) navigate(mailPath(first.address, 'inbox'), { replace: true });
  }, [route.mailbox, route.view.kind, mailboxes.data]);

  // Keys that act on a message act only where messages are shown, not in the compose form or the drafts.
  const inFolder = isList(route.view);
  const current = inFolder ? (route.messageId ?? items[selected] ?? null) : null;
  const go = (to: string | null) => to !== null && navigate(to);
  const open = (id: string) => go(listPath(route, id, route.offset));
  const back = () => go(listPath(route, null, route.offset));
  const write = (mode: ComposeMode) => {
    if (!route.mailbox) return;
    if (mode === 'new') navigate(composePath(route.mailbox));
    else if (current !== null && !isThreadId(current)) navigate(composePath(route.mailbox, { source: current, mode }));
  };
  const act = (kind: 'archive' | 'trash') => {
    if (current === null) return;
    if (isThreadId(current)) {
      void moveThread(current, route.folder, kind).catch(() => undefined);
      if (route.messageId) back();
      return;
    }
    action.mutate({ id: current, action: { kind: 'move', folder: kind } });
    if (route.messageId) back();
  };

  // j/k move the selection in the list and, while a message is open, open its neighbour (as Gmail does).
  const step = (delta: number) => {
    if (!inFolder) return;
    const from = route.messageId ? items.indexOf(route.messageId) : selected;
    const to = Math.min(Math.max(from + delta, 0), Math.max(items.length - 1, 0));
    setSelected(() => to);
    const target = items[to];
    if (route.messageId && target && target !== route.messageId) open(target);
  };

  useShortcuts({
    next: () => step(1),
    previous: () => step(-1),
    open: () => current && !route.messageId && open(current),
    archive: () => act('archive'),
    trash: () => act('trash'),
    search: () => searchRef.current?.focus(),
    help: () => setHelpOpen((v) => !v),
    back: () => (helpOpen ? setHelpOpen(false) : route.messageId ? back() : undefined),
    compose: () => write('new'),
    reply: () => write('reply'),
    replyAll: () => write('all'),
    forward: () => write('forward'),
  });

  async function logout() {
    await api.POST('/app/api/logout').catch(() => undefined);
    onLogout();
  }

  return (
    <div className={`shell ${route.messageId ? 'reading' : ''}`}>
      <Header session={session} route={route} live={live} searchRef={searchRef} searchError={page.error} onLogout={() => void logout()} onHelp={() => setHelpOpen(true)} />
      <Sidebar mailboxes={mailboxes.data ?? []} route={route} />
      <main className="content" id="content">
        {route.view.kind === 'compose' ? (
          <Compose key={composeKey(route.view)} view={route.view} mailbox={route.mailbox} mailboxes={mailboxes.data ?? []} />
        ) : route.view.kind === 'drafts' ? (
          <Drafts mailbox={route.mailbox} />
        ) : isThreadId(route.messageId) ? (
          <ThreadView key={route.messageId} threadId={route.messageId} folder={route.folder} onBack={back} />
        ) : route.messageId ? (
          <MessageView key={route.messageId} messageId={route.messageId} onBack={back} />
        ) : cross ? (
          <BulkList route={route} page={page} selected={selected} onSelect={(i) => setSelected(() => i)} onOpen={open} />
        ) : route.mailbox === null ? (
          <p className="muted empty">{mailboxes.isPending ? 'Loading mailboxes…' : 'Choose a mailbox.'}</p>
        ) : route.folder === 'sent' && !route.q ? (
          <SentList route={route} selected={selected} onSelect={(i) => setSelected(() => i)} onOpen={open} />
        ) : (
          <>
            {route.folder !== 'sent' && !route.q && <ConversationToggle userId={session.user.user_id} on={grouping} />}
            {conversational ? (
              <ConversationBulkList route={route} page={threads} selected={selected} onSelect={(i) => setSelected(() => i)} onOpen={open} />
            ) : (
              <BulkList route={route} page={page} selected={selected} onSelect={(i) => setSelected(() => i)} onOpen={open} />
            )}
          </>
        )}
        <UndoToast />
      </main>
      <Shortcuts open={helpOpen} onClose={() => setHelpOpen(false)} />
    </div>
  );
}
