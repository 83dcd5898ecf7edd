// The Radix Primitives the pages use (window.Radix), as shadcn/ui builds on them, on the page's
// React.
export { Checkbox, DropdownMenu, Select, Slider, Tabs } from 'radix-ui';
