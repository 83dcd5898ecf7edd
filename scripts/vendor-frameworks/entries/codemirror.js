// CodeMirror 6 with its basic setup (window.CodeMirror); no React.
export { EditorView, basicSetup } from 'codemirror';
