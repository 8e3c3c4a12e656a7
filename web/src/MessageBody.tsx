import { useEffect, useMemo, useRef, useState } from 'react';
import { client } from './api';
import { dataUrlOf, IMAGE_TYPE, MAX_PREVIEW_BYTES } from './Preview';
import { cidOf, hasRemoteContent, messageDocument, textDocument } from './sanitize';
import type { FullMessage } from './types';

/** At most this many inline images are fetched for one message; the rest stay blank, as remote ones do. */
const MAX_INLINE_IMAGES = 50;

/**
 * The message's own images (its parts with a Content-ID that its HTML shows as `cid:…`), read as data: URLs so the
 * frame, which fetches nothing, can show them (decision 762). Empty until read; a part that fails stays blank.
 */
function useInlineImages(message: FullMessage): ReadonlyMap<string, string> | null {
  const [images, setImages] = useState<ReadonlyMap<string, string> | null>(null);
  const html = message.html;
  const wanted = useMemo(() => {
    if (html === null || !/cid:/i.test(html)) return [];
    const named = new Set([...html.matchAll(/cid:([^"'\s)>]+)/gi)].map((m) => cidOf(`cid:${m[1] ?? ''}`)));
    return message.attachments
      .filter((a) => a.content_id != null && named.has(a.content_id) && IMAGE_TYPE.test(a.content_type.toLowerCase()) && a.size <= MAX_PREVIEW_BYTES)
      .slice(0, MAX_INLINE_IMAGES);
  }, [html, message.attachments]);
  useEffect(() => {
    let live = true;
    if (wanted.length === 0) return undefined;
    void Promise.all(wanted.map(async (a) => {
      const params = { path: { message_id: message.message_id, attachment_id: a.attachment_id } };
      const { data } = await client.GET('/app/api/messages/{message_id}/attachments/{attachment_id}', { params, headers: { accept: null }, parseAs: 'blob' });
      return [a.content_id ?? '', await dataUrlOf(new Blob([data as Blob], { type: a.content_type.toLowerCase() }))] as const;
    }).map((p) => p.catch(() => null))).then((pairs) => {
      if (live) setImages(new Map(pairs.filter((p) => p !== null)));
    });
    return () => {
      live = false;
    };
  }, [wanted, message.message_id]);
  return wanted.length === 0 ? null : images;
}

/** The frame's border, top and bottom (styles.css, .message-frame). */
const FRAME_BORDER_PX = 2;

/**
 * The height of `srcDoc` as laid out at the frame's width, read from an inert copy (decision 701): the shown frame's
 * origin is opaque, so this page cannot read it. The copy may share this origin because nothing in it can act: no
 * scripts, popups, forms or navigation (its sandbox allows none), hidden, out of the focus order and the a11y tree.
 */
function useContentHeight(srcDoc: string): { ref: React.RefObject<HTMLIFrameElement | null>; height: number | null } {
  const ref = useRef<HTMLIFrameElement>(null);
  const [height, setHeight] = useState<number | null>(null);
  useEffect(() => {
    const frame = ref.current;
    if (!frame) return undefined;
    let observer: ResizeObserver | null = null;
    const measure = () => {
      const doc = frame.contentDocument;
      if (doc?.body && doc.URL === 'about:srcdoc') setHeight(doc.documentElement.scrollHeight);
    };
    // Each new srcdoc is a new document: observe its body (images arriving, the width changing) from its load on.
    const loaded = () => {
      observer?.disconnect();
      const body = frame.contentDocument?.body;
      if (!body) return;
      measure();
      observer = new ResizeObserver(measure);
      observer.observe(body);
    };
    frame.addEventListener('load', loaded);
    loaded();
    return () => {
      frame.removeEventListener('load', loaded);
      observer?.disconnect();
    };
  }, [srcDoc]);
  return { ref, height };
}

/**
 * The message's body in a sandboxed frame: no allow-scripts and no allow-same-origin (an opaque origin that can
 * read neither this page nor its storage); allow-popups only so its links open in a new tab, outside the sandbox.
 * The frame is as tall as its content, measured on an inert copy (useContentHeight).
 */
export function MessageBody({ message }: { message: FullMessage }) {
  const [showImages, setShowImages] = useState(false);
  const inline = useInlineImages(message);
  const srcDoc = useMemo(
    () => (message.html !== null ? messageDocument(message.html, showImages, inline) : textDocument(message.text ?? '')),
    [message.html, message.text, showImages, inline],
  );
  const { ref, height } = useContentHeight(srcDoc);
  const remote = message.html !== null && hasRemoteContent(message.html);
  return (
    <div className="body">
      {remote && !showImages && (
        <p className="notice">
          Remote images are hidden to protect your privacy.{' '}
          <button type="button" onClick={() => setShowImages(true)}>Show images</button>
        </p>
      )}
      <div className="frame-box">
        <iframe
          title={`Message: ${message.subject || '(no subject)'}`}
          sandbox="allow-popups allow-popups-to-escape-sandbox"
          referrerPolicy="no-referrer"
          srcDoc={srcDoc}
          className="message-frame"
          style={height === null ? undefined : { height: `${height + FRAME_BORDER_PX}px` }}
        />
        <iframe ref={ref} title="Message layout" aria-hidden="true" tabIndex={-1} inert sandbox="allow-same-origin" referrerPolicy="no-referrer" srcDoc={srcDoc} className="measure-frame" />
      </div>
    </div>
  );
}
