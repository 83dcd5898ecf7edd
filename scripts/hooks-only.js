// The page world's hooks alone, with empty bodies: what extension/page/document-start.js installs
// at document_start (the dialogs' three wrappers, the listener record's two, the getter on
// console, three error listeners, the WebMCP placeholders, the listeners for the extension's own
// events), part by part in the same order, capturing nothing. A lower bound for any page world
// that captures from the page's first line (docs/performance.md, "What the hooks alone cost"):
//   node --experimental-websocket scripts/content-script-cost.mjs extension hooks floor
// or, in the bench, a copy of extension/ with this file as its page/document-start.min.js:
//   cp -a extension /tmp/hooks && cp scripts/hooks-only.js /tmp/hooks/page/document-start.min.js
//   BENCH_EXTENSION=/tmp/hooks BENCH_CASES=button,form cargo bench --bench bridge -- --browser-only
(()=>{const G=Symbol.for("browser-mcp.page");if(window[G])return;Object.defineProperty(window,G,{value:!0});const P=EventTarget.prototype,{addEventListener:L,removeEventListener:U}=P,d=Object.defineProperty,o=(n,h)=>{const w=Object.getOwnPropertyDescriptor(window,n);if(!w?.configurable)return void h(window[n]);d(window,n,{get(){return d(window,n,w),h(w.get?w.get.call(window):w.value)},set:w.set,enumerable:w.enumerable,configurable:!0})},q=[];
const N={alert:window.alert,confirm:window.confirm,prompt:window.prompt};window.alert=function(){return N.alert.apply(this,arguments)};window.confirm=function(){return N.confirm.apply(this,arguments)};window.prompt=function(){return N.prompt.apply(this,arguments)};L.call(window,"browser-mcp:dialog-until",e=>e.preventDefault(),!0);
const K=new WeakMap;d(P,"addEventListener",{value:function(t,l,x){return t==="click"&&this?.nodeType===1&&K.set(this,1),L.call(this,t,l,x)},writable:!0,configurable:!0,enumerable:!0});d(P,"removeEventListener",{value:function(t,l,x){return U.call(this,t,l,x)},writable:!0,configurable:!0,enumerable:!0});L.call(window,"browser-mcp:key",e=>q.push(e),!0);L.call(document,"browser-mcp:listeners",e=>q.push(e));
o("console",c=>c);L.call(window,"error",e=>q.push(e),!0);L.call(window,"unhandledrejection",e=>q.push(e),!0);L.call(document,"securitypolicyviolation",e=>q.push(e),!0);L.call(document,"browser-mcp:console-flush",e=>q.push(e));
if(window===window.top){const n="modelContext"in document;d(document,"modelContext",{get:()=>n,configurable:!0,enumerable:!0});o("navigator",v=>(d(v,"modelContext",{get:()=>n,configurable:!0,enumerable:!0}),v));L.call(document,"browser-mcp:to-page",e=>q.push(e))}})();
