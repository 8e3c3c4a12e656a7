import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { ApiError } from './api';
import { bytes } from './format';
import { draftFile, removeAttachment, uploadAttachments, type Draft, type DraftAttachment } from './sending';

// The compose form's files: those attached (chosen, dropped or pasted) and the inline images of the body, each a
// file of the draft (decision 760). An inline one has a Content-ID that the HTML shows as `cid:…`.

export interface DraftFiles {
  files: DraftAttachment[];
  working: string | null;
  problem: string | null;
  dragging: boolean;
  setDragging: (on: boolean) => void;
  add: (files: File[]) => void;
  /** Uploads an image as an inline file; answers its Content-ID once the draft has it. */
  addInline: (file: File) => Promise<string>;
  remove: (file: DraftAttachment) => void;
  /** A URL this page may show for an inline image of the draft (its bytes as a blob: URL). */
  imageSource: (cid: string) => Promise<string>;
  /** Removes the inline files the HTML no longer shows (an image deleted in the editor), before a send. */
  dropUnused: (html: string) => Promise<void>;
}

const problemOf = (err: unknown) => (err instanceof ApiError ? err.detail : 'the server did not answer; try again');

export function useDraftFiles(initial: DraftAttachment[], draftId: () => Promise<string>): DraftFiles {
  const [files, setFiles] = useState(initial);
  const [working, setWorking] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const current = useRef({ files, draftId });
  useEffect(() => {
    current.current = { files, draftId };
  });
  /** Object URLs by Content-ID, revoked when the form goes. */
  const urls = useRef(new Map<string, Promise<string>>());
  useEffect(() => {
    const made = urls.current;
    return () => {
      for (const url of made.values()) void url.then((u) => URL.revokeObjectURL(u), () => undefined);
    };
  }, []);

  const act = useCallback(async (label: string, task: (id: string) => Promise<Draft>): Promise<boolean> => {
    setWorking(label);
    setProblem(null);
    try {
      setFiles((await task(await current.current.draftId())).attachments);
      return true;
    } catch (err) {
      setProblem(problemOf(err));
      return false;
    } finally {
      setWorking(null);
    }
  }, []);

  const add = useCallback((picked: File[]) => {
    if (picked.length > 0) void act('Uploading…', (id) => uploadAttachments(id, picked));
  }, [act]);

  const addInline = useCallback(async (file: File): Promise<string> => {
    const cid = `${crypto.randomUUID()}@inline`;
    if (!(await act('Uploading…', (id) => uploadAttachments(id, [file], cid)))) throw new Error('not uploaded');
    urls.current.set(cid, Promise.resolve(URL.createObjectURL(file)));
    return cid;
  }, [act]);

  const imageSource = useCallback((cid: string): Promise<string> => {
    let url = urls.current.get(cid);
    if (url === undefined) {
      const file = current.current.files.find((f) => f.content_id === cid);
      url = file === undefined ? Promise.reject(new Error('no such image'))
        : current.current.draftId().then((id) => draftFile(id, file.attachment_id)).then((blob) => URL.createObjectURL(blob));
      urls.current.set(cid, url);
    }
    return url;
  }, []);

  const dropUnused = useCallback(async (html: string) => {
    const unused = current.current.files.filter((f) => f.content_id !== null && !html.includes(`cid:${f.content_id}`));
    if (unused.length === 0) return;
    const id = await current.current.draftId();
    for (const f of unused) await removeAttachment(id, f.attachment_id);
  }, []);

  const remove = useCallback((file: DraftAttachment) => {
    void act('Removing…', (id) => removeAttachment(id, file.attachment_id));
  }, [act]);

  return useMemo(() => ({ files, working, problem, dragging, setDragging, add, addInline, remove, imageSource, dropUnused }),
    [files, working, problem, dragging, add, addInline, remove, imageSource, dropUnused]);
}

/**
 * The draft's files: chosen, dropped or pasted files are uploaded to the draft at once (saving it first when it is
 * new), each can be removed. The upload is multipart/form-data, so a large file is never base64 in the page.
 */
export function Attachments({ files: state }: { files: DraftFiles }) {
  const { files, working, problem } = state;
  const input = useRef<HTMLInputElement>(null);

  function chosen() {
    const picked = [...(input.current?.files ?? [])];
    if (input.current) input.current.value = '';
    state.add(picked);
  }

  return (
    <div className="field attachments-field">
      <label htmlFor="compose-files">Files</label>
      <div>
        {files.length > 0 && (
          <ul className="compose-files" aria-label="Attached files">
            {files.map((a) => (
              <li key={a.attachment_id}>
                <span className="file-name">{a.filename}</span> <span className="muted">{bytes(a.size)}{a.inline ? ', in the message' : ''}</span>{' '}
                <button type="button" disabled={working !== null} aria-label={`Remove ${a.filename}`} onClick={() => state.remove(a)}>Remove</button>
              </li>
            ))}
          </ul>
        )}
        <input id="compose-files" ref={input} type="file" multiple disabled={working !== null} onChange={chosen} aria-describedby="compose-files-hint" />
        <p id="compose-files-hint" className="muted hint">{working ?? 'Up to 25 MB in all. You can also drop or paste files here; an image dropped or pasted in the message goes in its text.'}</p>
        {problem && <p className="error" role="alert">Not attached: {problem}</p>}
      </div>
    </div>
  );
}
