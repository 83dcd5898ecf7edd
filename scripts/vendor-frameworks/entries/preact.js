// Preact with its hooks and htm (window.Preact): a page of Preact needs no build step.
export { h, render } from 'preact';
export { useEffect, useState } from 'preact/hooks';
export { default as html } from 'htm';
