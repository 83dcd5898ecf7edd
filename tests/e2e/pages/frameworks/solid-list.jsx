// The Solid page's component (solid.html), compiled by Solid's own Babel preset when vendored
// (scripts/vendor-frameworks/build.mjs): its onClick handlers become `$$click` properties on
// the elements, and one listener on the document dispatches to them.
import { createSignal, For } from 'solid-js';
import { render } from 'solid-js/web';

function Groceries() {
  const [items, setItems] = createSignal([{ name: 'Milk', done: false }, { name: 'Eggs', done: false }]);
  const expose = () => {
    window.groceries = { items: items().map((i) => ({ ...i })) };
  };
  const add = () => {
    setItems([...items(), { name: 'Bread', done: false }]);
    expose();
  };
  const toggle = (name) => {
    setItems(items().map((i) => (i.name === name ? { ...i, done: !i.done } : i)));
    expose();
  };
  expose();
  return (
    <main>
      <h1>Groceries</h1>
      <ul>
        <For each={items()}>
          {(item) => (
            <li>
              <span class={item.done ? 'done' : ''}>{item.name}</span>{' '}
              <span class="tick" onClick={() => toggle(item.name)}>{`Tick off ${item.name}`}</span>
            </li>
          )}
        </For>
      </ul>
      <div class="add" onClick={add}>Add bread</div>
    </main>
  );
}

render(() => <Groceries />, document.getElementById('app'));
window.ready = true;
