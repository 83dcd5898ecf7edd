// The Headless UI components the pages use (window.HeadlessUI), on the page's React.
export {
  Combobox, ComboboxInput, ComboboxOption, ComboboxOptions, Listbox, ListboxButton, ListboxOption,
  ListboxOptions, Menu, MenuButton, MenuItem, MenuItems, Switch,
} from '@headlessui/react';
