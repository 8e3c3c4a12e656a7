import { useEffect, useRef, useState } from 'react';
import { ApiError, client } from './api';
import type { Attachment } from './types';

/** Image types a browser shows in an `<img>`, where even SVG runs no script and loads nothing (decision 702). */
export const IMAGE_TYPE = /^image\/(png|jpeg|gif|webp|avif|bmp|svg\+xml)$/;
/** Larger files are offered for download only: a data: URL of them would cost the tab that much memory again. */
export const MAX_PREVIEW_BYTES = 20 * 1024 * 1024;

const isPdf = (a: Attachment): boolean => a.content_type.toLowerCase() === 'application/pdf';

export const previewable = (a: Attachment): boolean => (IMAGE_TYPE.test(a.content_type.toLowerCase()) || isPdf(a)) && a.size <= MAX_PREVIEW_BYTES;

const fileOf = async (messageId: string, attachment: Attachment): Promise<Blob> => {
  const params = { path: { message_id: messageId, attachment_id: attachment.attachment_id } };
  const { data } = await client.GET('/app/api/messages/{message_id}/attachments/{attachment_id}', { params, headers: { accept: null }, parseAs: 'blob' });
  return new Blob([data as Blob], { type: attachment.content_type.toLowerCase() });
};

/** The frame's document: a policy that allows nothing but data: images and inline style, then the image alone. */
export function previewDocument(dataUrl: string): string {
  const csp = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'none'; form-action 'none'; base-uri 'none'";
  return `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="${csp}"><meta charset="utf-8"><meta name="referrer" content="no-referrer"><style>html,body{margin:0;height:100%;background:#fff}body{display:flex;align-items:center;justify-content:center}img{max-width:100%;max-height:100%;object-fit:contain}</style></head><body><img alt="" src="${dataUrl}"></body></html>`;
}

export function dataUrlOf(blob: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    // readAsDataURL always yields a string.
    reader.onload = () => resolve(typeof reader.result === 'string' ? reader.result : '');
    reader.onerror = () => reject(new Error('the file could not be read'));
    reader.readAsDataURL(blob);
  });
}

/**
 * One attachment previewed in a frame sandboxed without any allowance (no scripts, no same origin, no popups, no
 * navigation), its bytes inlined as a data: URL of the type checked above, so the frame fetches nothing.
 */
export function AttachmentPreview(props: { messageId: string; attachment: Attachment }) {
  return isPdf(props.attachment) ? <PdfPreview {...props} /> : <ImagePreview {...props} />;
}

function ImagePreview({ messageId, attachment }: { messageId: string; attachment: Attachment }) {
  const [doc, setDoc] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    fileOf(messageId, attachment)
      .then(dataUrlOf)
      .then((url) => live && setDoc(previewDocument(url)))
      .catch((err: unknown) => live && setError(err instanceof ApiError ? err.detail : 'the preview could not be loaded'));
    return () => {
      live = false;
    };
  }, [messageId, attachment]);
  if (error) return <p className="error" role="alert">{error}</p>;
  if (doc === null) return <p className="loading" role="status">Loading the preview…</p>;
  return <iframe title={`Preview of ${attachment.filename}`} sandbox="" referrerPolicy="no-referrer" srcDoc={doc} className="preview-frame" />;
}

/**
 * A PDF drawn by pdf.js in the preview page (decision 763): a frame sandboxed with `allow-scripts` only, so its
 * origin is opaque (no access to this page, its storage or its cookies). The page says when it is ready; the file's
 * bytes are then handed over by postMessage, so the frame fetches nothing.
 */
function PdfPreview({ messageId, attachment }: { messageId: string; attachment: Attachment }) {
  const frame = useRef<HTMLIFrameElement>(null);
  const [bytes, setBytes] = useState<ArrayBuffer | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    fileOf(messageId, attachment)
      .then((blob) => blob.arrayBuffer())
      .then((data) => live && setBytes(data))
      .catch((err: unknown) => live && setError(err instanceof ApiError ? err.detail : 'the preview could not be loaded'));
    return () => {
      live = false;
    };
  }, [messageId, attachment]);
  useEffect(() => {
    if (bytes === null) return undefined;
    const ready = (event: MessageEvent<unknown>) => {
      const target = frame.current?.contentWindow;
      if (!target || event.source !== target || event.data !== 'pdf-preview-ready') return;
      const copy = bytes.slice(0);
      // The frame's origin is opaque: no origin but '*' can name it. Only this frame's window is the target.
      target.postMessage(copy, '*', [copy]);
    };
    window.addEventListener('message', ready);
    return () => window.removeEventListener('message', ready);
  }, [bytes]);
  if (error) return <p className="error" role="alert">{error}</p>;
  if (bytes === null) return <p className="loading" role="status">Loading the preview…</p>;
  return <iframe ref={frame} title={`Preview of ${attachment.filename}`} sandbox="allow-scripts" referrerPolicy="no-referrer" src="/pdf-preview.html" className="preview-frame" />;
}
