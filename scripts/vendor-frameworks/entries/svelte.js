// The Svelte 5 page: its component compiled by Svelte's own compiler, mounted with Svelte's
// runtime (Svelte has no runtime to load apart from compiled components).
import { mount } from 'svelte';
import Cart from '../../../tests/e2e/pages/frameworks/svelte-cart.svelte';

mount(Cart, { target: document.getElementById('app') });
