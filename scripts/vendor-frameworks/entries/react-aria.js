// The React Aria Components the pages use (window.ReactAria), on the page's React.
export { Button, Label, ListBox, ListBoxItem, Popover, Select, SelectValue } from 'react-aria-components';
