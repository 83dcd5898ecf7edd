// The select of Ant Design (its core, @rc-component/select; window.RcSelect), on the page's
// React.
export { default as Select } from '@rc-component/select';
