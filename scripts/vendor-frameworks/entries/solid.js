// The Solid page's component, compiled by Solid's Babel preset, with the runtime it imports.
import '../../../tests/e2e/pages/frameworks/solid-list.jsx';
