// React 19 ships no browser build: this bundle is React and ReactDOM (with its client), as
// the globals the pages and the other bundles use.
import * as React from 'react';
import * as ReactDOM from 'react-dom';
import * as ReactDOMClient from 'react-dom/client';
import * as ReactJSXRuntime from 'react/jsx-runtime';

window.React = React;
window.ReactDOM = { ...ReactDOM, ...ReactDOMClient };
window.ReactJSXRuntime = ReactJSXRuntime;
