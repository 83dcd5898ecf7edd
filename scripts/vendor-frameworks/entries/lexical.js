// Lexical's core, rich-text and history packages (window.Lexical); no React.
export * from 'lexical';
export { registerRichText, HeadingNode, QuoteNode } from '@lexical/rich-text';
export { registerHistory, createEmptyHistoryState } from '@lexical/history';
