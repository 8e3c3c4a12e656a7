import { useMemo, useState } from 'react';
import { hasRemoteContent, messageDocument, textDocument } from './sanitize';
import type { FullMessage } from './types';

/**
 * The message's body in a sandboxed frame: no allow-scripts and no allow-same-origin (an opaque origin that can
 * read neither this page nor its storage); allow-popups only so its links open in a new tab, outside the sandbox.
 */
export function MessageBody({ message }: { message: FullMessage }) {
  const [showImages, setShowImages] = useState(false);
  const srcDoc = useMemo(
    () => (message.html !== null ? messageDocument(message.html, showImages) : textDocument(message.text ?? '')),
    [message.html, message.text, showImages],
  );
  const remote = message.html !== null && hasRemoteContent(message.html);
  return (
    <div className="body">
      {remote && !showImages && (
        <p className="notice">
          Remote images are hidden to protect your privacy.{' '}
          <button type="button" onClick={() => setShowImages(true)}>Show images</button>
        </p>
      )}
      <iframe
        title={`Message: ${message.subject || '(no subject)'}`}
        sandbox="allow-popups allow-popups-to-escape-sandbox"
        referrerPolicy="no-referrer"
        srcDoc={srcDoc}
        className="message-frame"
      />
    </div>
  );
}
