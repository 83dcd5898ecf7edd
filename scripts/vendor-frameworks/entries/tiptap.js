// Tiptap's editor with its starter kit (window.Tiptap), on ProseMirror; no React.
export { Editor } from '@tiptap/core';
export { default as StarterKit } from '@tiptap/starter-kit';
