// The Ark UI components the pages use (window.Ark: Chakra UI's primitives, on zag.js state
// machines), on the page's React.
export { Menu, Select, Switch, createListCollection } from '@ark-ui/react';
