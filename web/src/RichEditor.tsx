import { Extension, Node, type Editor as CoreEditor } from '@tiptap/core';
import { EditorContent, useEditor, useEditorState, type Editor } from '@tiptap/react';
import StarterKit from '@tiptap/starter-kit';
import { useEffect, useRef, useState } from 'react';
import { sanitizeHtml } from './sanitize';

// The composer's rich-text editor (Tiptap over ProseMirror). It is heavy, so it is only ever reached through a
// dynamic import: the first page load does not carry it (decision 720).

/**
 * Ctrl+Enter / Cmd+Enter belongs to the form (send), not to the editor's hard break: the shortcut is swallowed here
 * and the keydown goes on up to the form.
 */
const LeaveModEnter = Extension.create({
  name: 'leaveModEnter',
  priority: 1000,
  addKeyboardShortcuts: () => ({ 'Mod-Enter': () => true }),
});

/** Where the editor shows an inline image from: its Content-ID to a URL this page may load (blob: or data:). */
export type ImageSource = (cid: string) => Promise<string>;

const NO_SOURCE: ImageSource = () => Promise.reject(new Error('no image source'));

/**
 * An image of the message itself: in the HTML it is `<img src="cid:…">`, the draft's inline file of that Content-ID
 * (decision 761). Only `cid:` images are parsed, so pasted HTML brings no remote image in; the editor shows the bytes
 * through `source`, never the cid: URL.
 */
const InlineImage = Node.create<{ source: ImageSource }>({
  name: 'inlineImage',
  group: 'inline',
  inline: true,
  atom: true,
  draggable: true,
  addOptions: () => ({ source: NO_SOURCE }),
  addAttributes: () => ({
    cid: { default: null, parseHTML: (el) => el.getAttribute('src')?.slice(4) ?? null, renderHTML: (a) => ({ src: `cid:${String(a.cid)}` }) },
    alt: { default: '' },
  }),
  parseHTML: () => [{ tag: 'img[src^="cid:"]' }],
  renderHTML: ({ HTMLAttributes }) => ['img', HTMLAttributes],
  addNodeView() {
    const { source } = this.options;
    return ({ node }) => {
      const img = document.createElement('img');
      img.alt = String(node.attrs.alt ?? '');
      img.className = 'inline-image';
      source(String(node.attrs.cid)).then((url) => (img.src = url), () => (img.alt = `${img.alt} (not found)`));
      return { dom: img };
    };
  },
});

const IMAGE_TYPE = /^image\/(png|jpeg|gif|webp)$/;

/** Files a paste or a drop brings: images go inline in the body, the rest are attached. */
export interface FileHandlers {
  /** Uploads the image as an inline file and answers its Content-ID. */
  onImage: (file: File) => Promise<string>;
  onFiles: (files: File[]) => void;
}

export interface RichEditorProps extends Partial<FileHandlers> {
  initialHtml: string;
  onChange: (html: string) => void;
  labelledBy: string;
  autofocus: boolean;
  /** Read once, when the editor is made (keep it stable). Without it (a signature) a pasted or dropped file is ignored. */
  imageSource?: ImageSource;
}

const refuse = () => Promise.reject(new Error('no files here'));

/** Splits the files: images inserted at `pos` once uploaded (the editor may have changed meanwhile), others attached. */
function takeFiles(editor: CoreEditor | null, files: File[], pos: number | null, handlers: FileHandlers): void {
  const images = files.filter((f) => IMAGE_TYPE.test(f.type));
  const others = files.filter((f) => !IMAGE_TYPE.test(f.type));
  if (others.length > 0) handlers.onFiles(others);
  for (const file of images) {
    handlers.onImage(file).then((cid) => {
      if (!editor || editor.isDestroyed) return;
      const content = { type: 'inlineImage', attrs: { cid, alt: file.name } };
      const at = pos !== null && pos <= editor.state.doc.content.size ? pos : null;
      if (at === null) editor.chain().focus().insertContent(content).run();
      else editor.chain().focus().insertContentAt(at, content).run();
    }, () => undefined);
  }
}

/** HTML pasted from another app is hostile input like any mail: cleaned by the mail sanitizer before it is parsed. */
export const cleanPaste = (html: string): string => sanitizeHtml(html);

export default function RichEditor(props: RichEditorProps) {
  const { initialHtml, labelledBy, autofocus } = props;
  // The editor keeps the callbacks it was made with; the latest ones are reached through this ref.
  const latest = useRef(props);
  useEffect(() => {
    latest.current = props;
  });
  const editorRef = useRef<CoreEditor | null>(null);
  const [inlineImage] = useState(() => InlineImage.configure({ source: props.imageSource ?? NO_SOURCE }));
  const handlers: FileHandlers = { onImage: (f) => (latest.current.onImage ?? refuse)(f), onFiles: (f) => latest.current.onFiles?.(f) };
  const editor = useEditor({
    extensions: [
      StarterKit.configure({ link: { openOnClick: false, autolink: true, defaultProtocol: 'https' } }),
      LeaveModEnter,
      inlineImage,
    ],
    content: initialHtml,
    autofocus: autofocus ? 'start' : false,
    editorProps: {
      attributes: { role: 'textbox', 'aria-multiline': 'true', 'aria-labelledby': labelledBy, class: 'rich-body' },
      transformPastedHTML: cleanPaste,
      handlePaste: (_view, event) => {
        const files = [...(event.clipboardData?.files ?? [])];
        if (files.length === 0) return false;
        takeFiles(editorRef.current, files, null, handlers);
        return true;
      },
      handleDrop: (view, event) => {
        const files = [...(event.dataTransfer?.files ?? [])];
        if (files.length === 0) return false;
        event.preventDefault();
        const pos = view.posAtCoords({ left: event.clientX, top: event.clientY })?.pos ?? null;
        takeFiles(editorRef.current, files, pos, handlers);
        return true;
      },
    },
    onUpdate: ({ editor: e }) => latest.current.onChange(e.getHTML()),
  });
  useEffect(() => {
    editorRef.current = editor;
  }, [editor]);
  return (
    <div className="rich-editor">
      <Toolbar editor={editor} />
      <EditorContent editor={editor} />
    </div>
  );
}

function Toolbar({ editor }: { editor: Editor }) {
  const state = useEditorState({
    editor,
    selector: ({ editor: e }) => ({
      bold: e.isActive('bold'),
      italic: e.isActive('italic'),
      bullet: e.isActive('bulletList'),
      ordered: e.isActive('orderedList'),
      quote: e.isActive('blockquote'),
      link: e.isActive('link'),
    }),
  });
  const [linking, setLinking] = useState(false);
  const chain = () => editor.chain().focus();
  const button = (label: string, pressed: boolean, run: () => void, shortcut?: string) => (
    <button type="button" aria-pressed={pressed} onClick={run} title={shortcut ? `${label} (${shortcut})` : label}>{label}</button>
  );
  return (
    <div role="toolbar" aria-label="Formatting" className="rich-toolbar">
      {button('Bold', state.bold, () => chain().toggleBold().run(), 'Ctrl+B')}
      {button('Italic', state.italic, () => chain().toggleItalic().run(), 'Ctrl+I')}
      {button('Bulleted list', state.bullet, () => chain().toggleBulletList().run())}
      {button('Numbered list', state.ordered, () => chain().toggleOrderedList().run())}
      {button('Quote', state.quote, () => chain().toggleBlockquote().run())}
      {button('Link', state.link, () => setLinking(!linking))}
      {linking && <LinkForm editor={editor} done={() => setLinking(false)} />}
    </div>
  );
}

/** The address of a link over the selection (or, with nothing selected, a link whose text is the address). */
function LinkForm({ editor, done }: { editor: Editor; done: () => void }) {
  const [href, setHref] = useState(() => String(editor.getAttributes('link').href ?? ''));
  function apply() {
    const url = href.trim();
    const chain = editor.chain().focus().extendMarkRange('link');
    if (url === '') chain.unsetLink().run();
    else if (editor.state.selection.empty && !editor.isActive('link')) chain.insertContent({ type: 'text', text: url, marks: [{ type: 'link', attrs: { href: url } }] }).run();
    else chain.setLink({ href: url }).run();
    done();
  }
  return (
    <span className="rich-link">
      <label htmlFor="rich-link-href">Link address</label>
      <input id="rich-link-href" type="url" value={href} autoFocus onChange={(e) => setHref(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.ctrlKey && !e.metaKey) {
            e.preventDefault();
            apply();
          }
          if (e.key === 'Escape') done();
        }} />
      <button type="button" onClick={() => apply()}>Apply link</button>
    </span>
  );
}
