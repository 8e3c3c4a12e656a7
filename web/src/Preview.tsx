import { useEffect, useState } from 'react';
import { ApiError, client } from './api';
import type { Attachment } from './types';

/** Image types a browser shows in an `<img>`, where even SVG runs no script and loads nothing (decision 702). */
export const IMAGE_TYPE = /^image\/(png|jpeg|gif|webp|avif|bmp|svg\+xml)$/;
/** Larger files are offered for download only: a data: URL of them would cost the tab that much memory again. */
export const MAX_PREVIEW_BYTES = 20 * 1024 * 1024;

export const previewable = (a: Attachment): boolean => IMAGE_TYPE.test(a.content_type.toLowerCase()) && a.size <= MAX_PREVIEW_BYTES;

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
export function AttachmentPreview({ messageId, attachment }: { messageId: string; attachment: Attachment }) {
  const [doc, setDoc] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    const params = { path: { message_id: messageId, attachment_id: attachment.attachment_id } };
    client
      .GET('/app/api/messages/{message_id}/attachments/{attachment_id}', { params, headers: { accept: null }, parseAs: 'blob' })
      .then(({ data }) => dataUrlOf(new Blob([data as Blob], { type: attachment.content_type.toLowerCase() })))
      .then((url) => live && setDoc(previewDocument(url)))
      .catch((err: unknown) => live && setError(err instanceof ApiError ? err.detail : 'the preview could not be loaded'));
    return () => {
      live = false;
    };
  }, [messageId, attachment.attachment_id, attachment.content_type]);
  if (error) return <p className="error" role="alert">{error}</p>;
  if (doc === null) return <p className="loading" role="status">Loading the preview…</p>;
  return <iframe title={`Preview of ${attachment.filename}`} sandbox="" referrerPolicy="no-referrer" srcDoc={doc} className="preview-frame" />;
}
