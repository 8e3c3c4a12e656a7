import { Extension } from '@tiptap/core';
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

export interface RichEditorProps {
  initialHtml: string;
  onChange: (html: string) => void;
  labelledBy: string;
  autofocus: boolean;
}

/** HTML pasted from another app is hostile input like any mail: cleaned by the mail sanitizer before it is parsed. */
export const cleanPaste = (html: string): string => sanitizeHtml(html);

export default function RichEditor({ initialHtml, onChange, labelledBy, autofocus }: RichEditorProps) {
  // The editor keeps the callbacks it was made with; the latest onChange is reached through this ref.
  const changed = useRef(onChange);
  useEffect(() => {
    changed.current = onChange;
  });
  const editor = useEditor({
    extensions: [StarterKit.configure({ link: { openOnClick: false, autolink: true, defaultProtocol: 'https' } }), LeaveModEnter],
    content: initialHtml,
    autofocus: autofocus ? 'start' : false,
    editorProps: {
      attributes: { role: 'textbox', 'aria-multiline': 'true', 'aria-labelledby': labelledBy, class: 'rich-body' },
      transformPastedHTML: cleanPaste,
    },
    onUpdate: ({ editor: e }) => changed.current(e.getHTML()),
  });
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
