// react-select (window.ReactSelect), on the page's React.
export { default as Select } from 'react-select';
