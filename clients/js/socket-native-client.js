// SocketNativeClient: the seed-003 ("Socket Native") JSON-RPC 2.0 over WebSocket client.
//
// One dependency-free ES module for browsers, Node and Electron. A tool provider
// (clientType=browser) registers tools and answers the `tools/call` requests the server
// forwards; a tool consumer (clientType=agent) uses sendRequest for `session/join`,
// `tools/list` and `tools/call`. See README.md next to this file.

/** The protocol version sent when none is given. */
export const PROTOCOL_VERSION = '1.0.0';

/** The error codes of the protocol. */
export const ErrorCodes = Object.freeze({
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  CONNECTION_ERROR: -32000,
});

const OPEN = 1; // WebSocket.OPEN, read from no constructor so an injected one needs no statics
const MAX_RECONNECT_DELAY = 30000;
/**
 * The close code browser-mcpd uses when a newer connection of the same session replaces this
 * one: reconnecting would only replace that one in turn, back and forth.
 */
const REPLACED = 4000;
/** What a new connection has registered: nothing. */
const NO_TOOLS = Object.freeze([]);
const CONTENT_TYPES = new Set(['text', 'image', 'audio', 'resource', 'resource_link']);

/**
 * A JSON-RPC error: one the server answered with (`code`, `message`, `data` as sent), or a
 * connection failure of this client (`code` -32000).
 */
export class JsonRpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = 'JsonRpcError';
    this.code = code;
    if (data !== undefined) this.data = data;
  }
}

function connectionError(message) {
  return new JsonRpcError(ErrorCodes.CONNECTION_ERROR, message);
}

function isContentItem(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || !CONTENT_TYPES.has(v.type)) {
    return false;
  }
  switch (v.type) {
    case 'text':
      return typeof v.text === 'string';
    case 'image':
    case 'audio':
      return typeof v.data === 'string' && typeof v.mimeType === 'string';
    case 'resource':
      return v.resource !== null && typeof v.resource === 'object';
    default:
      return typeof v.uri === 'string';
  }
}

/**
 * What a handler returned, as a tool result `{content, isError}`:
 * - a string becomes one text item;
 * - a result already shaped as `{content: [...]}` passes through (`isError` defaults to false);
 * - a content item, or an array of them, becomes the content;
 * - `undefined` becomes empty content;
 * - any other value becomes one text item holding its JSON.
 */
export function toToolResult(value) {
  if (typeof value === 'string') {
    return { content: [{ type: 'text', text: value }], isError: false };
  }
  if (value === undefined) return { content: [], isError: false };
  if (value !== null && typeof value === 'object' && Array.isArray(value.content)) {
    return { ...value, isError: value.isError === true };
  }
  if (isContentItem(value)) return { content: [value], isError: false };
  if (Array.isArray(value) && value.length > 0 && value.every(isContentItem)) {
    return { content: value, isError: false };
  }
  let text;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    text = String(value);
  }
  return { content: [{ type: 'text', text: text === undefined ? String(value) : text }], isError: false };
}

/** A thrown value as a failed tool result. */
export function toErrorResult(error) {
  const message =
    error instanceof Error ? error.message || error.name : typeof error === 'string' ? error : String(error);
  return { content: [{ type: 'text', text: message }], isError: true };
}

/**
 * The handlers of a client's tools, by name. `execute` runs one and turns what it returns
 * (or throws) into a tool result.
 */
export class ToolExecutor {
  #handlers = new Map();

  /** Sets the handler of `name`, replacing any previous one. */
  registerHandler(name, handler) {
    if (typeof name !== 'string' || name === '') throw new TypeError('a tool name must be a non-empty string');
    if (typeof handler !== 'function') throw new TypeError(`the handler of "${name}" must be a function`);
    this.#handlers.set(name, handler);
  }

  /** Removes the handler of `name`; true if there was one. */
  unregisterHandler(name) {
    return this.#handlers.delete(name);
  }

  hasHandler(name) {
    return this.#handlers.has(name);
  }

  getHandlerNames() {
    return [...this.#handlers.keys()];
  }

  /**
   * Runs the handler of `name` with `args` (and the request that asked for it). Resolves to
   * `{content, isError}`: `isError: true` with the message when the handler throws. Rejects
   * with a JsonRpcError (-32601) only when there is no such handler.
   */
  async execute(name, args, request) {
    const handler = this.#handlers.get(name);
    if (!handler) {
      throw new JsonRpcError(ErrorCodes.METHOD_NOT_FOUND, `Tool not found: ${name}`);
    }
    try {
      return toToolResult(await handler(args ?? {}, request));
    } catch (e) {
      return toErrorResult(e);
    }
  }
}

function randomSessionId() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === 'function') return `session-${c.randomUUID()}`;
  const part = () => Math.random().toString(36).slice(2, 10);
  return `session-${Date.now().toString(36)}-${part()}${part()}`;
}

function noop() {}

/** Decodes a message event's data: text frames are strings; `ws` may hand over bytes. */
function frameText(data) {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return new TextDecoder().decode(data);
  if (Array.isArray(data)) return data.map(frameText).join(''); // ws's "fragments"
  return null;
}

/**
 * A client of the Socket Native protocol. Events: `connect`, `disconnect(code, reason)`,
 * `error(error)`, `message(message)`, `toolCall(request)`, `toolsList(request)` and, as an
 * extension, `reconnecting(attempt, delayMs)`.
 */
export class SocketNativeClient {
  #options;
  #WebSocket;
  #sessionId;
  #executor = new ToolExecutor();
  #tools = NO_TOOLS;
  #listeners = new Map();
  #ws = null;
  #connected = false;
  #connecting = null;
  #abortAttempt = null;
  #closedByUs = false;
  #pending = new Map();
  #nextId = 1;
  #pingTimer = null;
  #reconnectTimer = null;
  #attempts = 0;
  #lastError = null;

  constructor(options) {
    if (!options || typeof options.serverUrl !== 'string') {
      throw new TypeError('SocketNativeClient needs options.serverUrl (ws:// or wss://)');
    }
    const url = new URL(options.serverUrl);
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
      throw new TypeError(`serverUrl must be a ws:// or wss:// URL, not ${options.serverUrl}`);
    }
    const clientType = options.clientType ?? 'browser';
    if (clientType !== 'browser' && clientType !== 'agent') {
      throw new TypeError(`clientType must be "browser" or "agent", not ${JSON.stringify(clientType)}`);
    }
    const WebSocketImpl = options.WebSocket ?? globalThis.WebSocket;
    if (typeof WebSocketImpl !== 'function') {
      throw new TypeError(
        'this runtime has no WebSocket: pass options.WebSocket (e.g. the "ws" package), ' +
          'or use Node >= 22 (Node 20/21: --experimental-websocket)',
      );
    }
    this.#WebSocket = WebSocketImpl;
    this.#options = {
      serverUrl: options.serverUrl,
      clientType,
      version: options.version ?? PROTOCOL_VERSION,
      token: options.token,
      autoReconnect: options.autoReconnect ?? true,
      reconnectDelay: options.reconnectDelay ?? 1000,
      maxReconnectAttempts: options.maxReconnectAttempts ?? 5,
      connectionTimeout: options.connectionTimeout ?? 10000,
      pingInterval: options.pingInterval ?? 30000,
      debug: options.debug ?? false,
    };
    this.#sessionId = options.sessionId || randomSessionId();
  }

  // ---- public API ----------------------------------------------------------------------------

  /**
   * Opens the connection and waits for the server's `welcome`, announces this client with
   * `hello`, and registers the tools given to registerTools before. Rejects (code -32000)
   * if that does not happen within `connectionTimeout` ms or the connection fails. A failed
   * connect() is not retried; automatic reconnection is for connections that were up.
   */
  connect() {
    if (this.#connected) return Promise.resolve();
    if (this.#connecting) return this.#connecting;
    this.#closedByUs = false;
    this.#clearReconnect();
    return this.#attempt();
  }

  /** Closes the connection (code 1000) and stops reconnecting; `disconnect` fires at once. */
  disconnect() {
    this.#closedByUs = true;
    this.#clearReconnect();
    if (this.#abortAttempt) this.#abortAttempt(connectionError('disconnected by the client'));
    const ws = this.#ws;
    if (ws) this.#drop(ws, 1000, 'client disconnect', true);
  }

  /** True between `connect` and `disconnect`. */
  isConnected() {
    return this.#connected;
  }

  getSessionId() {
    return this.#sessionId;
  }

  /**
   * Sets the tools this client offers (replacing those set before) and, when connected,
   * sends them with `tools/register`. They are sent again after every reconnection. A tool
   * may carry its `handler` function; it is registered and not sent.
   */
  async registerTools(tools) {
    if (!Array.isArray(tools)) throw new TypeError('registerTools takes an array of tools');
    const wire = tools.map((tool) => {
      if (!tool || typeof tool.name !== 'string' || tool.name === '') {
        throw new TypeError('every tool needs a non-empty string name');
      }
      const { handler, ...rest } = tool;
      if (handler !== undefined) this.registerHandler(tool.name, handler);
      return { inputSchema: { type: 'object' }, ...rest };
    });
    this.#tools = wire.length > 0 ? wire : NO_TOOLS;
    if (this.#connected) await this.sendRequest('tools/register', { tools: wire });
  }

  /** The executor holding this client's tool handlers. */
  getExecutor() {
    return this.#executor;
  }

  /** Sets the function that answers calls of tool `name`: `(args, request) => value`. */
  registerHandler(name, handler) {
    this.#executor.registerHandler(name, handler);
  }

  /**
   * Sends a request and resolves with its `result`; an error response rejects with a
   * JsonRpcError carrying the server's code, message and data. `options.timeout` (ms) bounds
   * the wait; a connection that ends first rejects it with code -32000.
   */
  sendRequest(method, params, options = {}) {
    const id = String(this.#nextId++);
    const message = { jsonrpc: '2.0', id, method };
    if (params !== undefined) message.params = params;
    return new Promise((resolve, reject) => {
      const ws = this.#ws;
      if (!ws || ws.readyState !== OPEN) {
        reject(connectionError(`cannot send ${method}: not connected`));
        return;
      }
      const entry = { resolve, reject, method, timer: null };
      if (options.timeout > 0) {
        entry.timer = setTimeout(() => {
          this.#pending.delete(id);
          reject(connectionError(`no answer to ${method} within ${options.timeout} ms`));
        }, options.timeout);
      }
      this.#pending.set(id, entry);
      try {
        this.#write(ws, message);
      } catch (e) {
        this.#pending.delete(id);
        clearTimeout(entry.timer);
        reject(connectionError(`cannot send ${method}: ${e.message}`));
      }
    });
  }

  /** Sends a message (an object, sent as JSON, or a string) without waiting for an answer. */
  async send(message) {
    const ws = this.#ws;
    if (!ws || ws.readyState !== OPEN) throw connectionError('cannot send: not connected');
    this.#write(ws, message);
  }

  on(event, handler) {
    if (typeof handler !== 'function') throw new TypeError('an event handler must be a function');
    if (!this.#listeners.has(event)) this.#listeners.set(event, new Set());
    this.#listeners.get(event).add(handler);
  }

  off(event, handler) {
    this.#listeners.get(event)?.delete(handler);
  }

  // ---- connecting ----------------------------------------------------------------------------

  #url() {
    const url = new URL(this.#options.serverUrl);
    if (url.pathname === '/' || url.pathname === '') url.pathname = '/ws';
    url.searchParams.set('sessionId', this.#sessionId);
    url.searchParams.set('clientType', this.#options.clientType);
    url.searchParams.set('version', this.#options.version);
    if (this.#options.token) url.searchParams.set('token', this.#options.token);
    return url;
  }

  /** One connection attempt: open, welcome, hello, register. */
  #attempt() {
    const promise = new Promise((resolve, reject) => {
      const url = this.#url();
      const shown = new URL(url);
      if (shown.searchParams.has('token')) shown.searchParams.set('token', '…');
      let ws;
      try {
        ws = new this.#WebSocket(url.toString());
      } catch (e) {
        reject(connectionError(`cannot open ${shown}: ${e.message}`));
        return;
      }
      this.#ws = ws;
      this.#log('connecting to', shown.toString());
      let settled = false;
      const fail = (err) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.#abortAttempt = null;
        this.#detach(ws);
        if (this.#ws === ws) this.#ws = null;
        this.#failPending(err.message);
        this.#lastError = err;
        this.#log('connect failed:', err.message);
        reject(err);
      };
      const timer = setTimeout(
        () => fail(connectionError(`no welcome from ${shown.host} within ${this.#options.connectionTimeout} ms`)),
        this.#options.connectionTimeout,
      );
      this.#abortAttempt = fail;
      const handshake = async () => {
        try {
          await this.#hello();
          // registerTools may run meanwhile (it only stores while not connected): send until
          // what the server has is what was set last.
          for (let sent = NO_TOOLS; sent !== this.#tools; ) {
            sent = this.#tools;
            await this.sendRequest('tools/register', { tools: sent });
          }
        } catch (e) {
          fail(e instanceof JsonRpcError ? e : connectionError(String(e?.message ?? e)));
          return;
        }
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.#abortAttempt = null;
        this.#connected = true;
        this.#attempts = 0;
        this.#startPing(ws);
        this.#log('connected, session', this.#sessionId);
        this.#emit('connect');
        resolve();
      };
      let welcomed = false;
      ws.onopen = () => this.#log('socket open, waiting for welcome');
      ws.onmessage = (event) => {
        this.#receive(ws, event.data, (message) => {
          if (!welcomed && message.method === 'welcome' && message.id === undefined) {
            welcomed = true;
            handshake();
          }
        });
      };
      ws.onerror = (event) => {
        if (!settled) {
          const detail = event?.message || event?.error?.message;
          fail(connectionError(`cannot connect to ${shown}${detail ? `: ${detail}` : ''}`));
        } else {
          this.#emit('error', connectionError(`WebSocket error${event?.message ? `: ${event.message}` : ''}`));
        }
      };
      ws.onclose = (event) => {
        if (!settled) {
          const why = event.reason ? `: ${event.reason}` : '';
          fail(connectionError(`connection to ${shown.host} closed during the handshake (code ${event.code}${why})`));
        } else {
          this.#drop(ws, event.code, event.reason, false);
        }
      };
    });
    this.#connecting = promise;
    const done = () => {
      if (this.#connecting === promise) this.#connecting = null;
    };
    promise.then(done, done);
    return promise;
  }

  async #hello() {
    try {
      await this.sendRequest('hello', { clientType: this.#options.clientType, version: this.#options.version });
    } catch (e) {
      // A server without `hello` is still one we can talk to; anything else is not.
      if (!(e instanceof JsonRpcError) || e.code !== ErrorCodes.METHOD_NOT_FOUND) throw e;
    }
  }

  #detach(ws) {
    // No-ops rather than null: the `ws` package throws on an 'error' nobody listens to.
    ws.onopen = noop;
    ws.onmessage = noop;
    ws.onerror = noop;
    ws.onclose = noop;
    try {
      ws.close();
    } catch (e) {
      // Already closing.
    }
  }

  /** The end of an established connection: by the peer, the network, a dead ping, or us. */
  #drop(ws, code, reason, byUs) {
    if (ws !== this.#ws) return;
    this.#ws = null;
    this.#stopPing();
    if (byUs) {
      ws.onopen = noop;
      ws.onmessage = noop;
      ws.onerror = noop;
      ws.onclose = noop;
      try {
        ws.close(1000, 'client disconnect');
      } catch (e) {
        // Already closing.
      }
    } else if (ws.readyState === OPEN) {
      this.#detach(ws);
    }
    const wasConnected = this.#connected;
    this.#connected = false;
    this.#failPending(`the connection closed (code ${code}${reason ? `: ${reason}` : ''})`);
    if (!wasConnected) return;
    this.#log('disconnected', code, reason);
    this.#emit('disconnect', code, reason ?? '');
    if (code === REPLACED) {
      this.#log('replaced by a newer connection of this session: not reconnecting');
      return;
    }
    if (!this.#closedByUs && this.#options.autoReconnect) this.#scheduleReconnect();
  }

  #scheduleReconnect() {
    const max = this.#options.maxReconnectAttempts;
    if (this.#attempts >= max) {
      const last = this.#lastError ? ` (last error: ${this.#lastError.message})` : '';
      const reason = `gave up reconnecting after ${this.#attempts} attempts${last}`;
      this.#log(reason);
      this.#emit('error', connectionError(reason));
      this.#emit('disconnect', 1006, reason);
      return;
    }
    this.#attempts += 1;
    const delay = Math.min(this.#options.reconnectDelay * 2 ** (this.#attempts - 1), MAX_RECONNECT_DELAY);
    this.#log(`reconnecting in ${delay} ms (attempt ${this.#attempts} of ${max})`);
    this.#emit('reconnecting', this.#attempts, delay);
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null;
      if (this.#closedByUs || this.#connected || this.#connecting) return;
      this.#attempt().catch(() => {
        if (!this.#closedByUs) this.#scheduleReconnect();
      });
    }, delay);
  }

  #clearReconnect() {
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
    this.#attempts = 0;
  }

  #startPing(ws) {
    const every = this.#options.pingInterval;
    if (!(every > 0)) return;
    this.#pingTimer = setInterval(() => {
      this.sendRequest('ping', undefined, { timeout: every }).catch((e) => {
        if (this.#ws !== ws) return;
        // A connection that cannot answer a ping is gone, whatever the socket believes.
        this.#log('ping failed:', e.message);
        this.#drop(ws, 1006, `no answer to ping (${e.message})`, false);
      });
    }, every);
  }

  #stopPing() {
    clearInterval(this.#pingTimer);
    this.#pingTimer = null;
  }

  // ---- messages ------------------------------------------------------------------------------

  #write(ws, message) {
    const text = typeof message === 'string' ? message : JSON.stringify(message);
    if (this.#options.debug) this.#log('→', text);
    ws.send(text);
  }

  #receive(ws, data, onNotification) {
    const text = frameText(data);
    if (text === null) {
      this.#emit('error', new JsonRpcError(ErrorCodes.PARSE_ERROR, 'received a binary frame; expected JSON text'));
      return;
    }
    if (this.#options.debug) this.#log('←', text);
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      this.#emit('error', new JsonRpcError(ErrorCodes.PARSE_ERROR, `received invalid JSON: ${e.message}`));
      return;
    }
    for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
      if (message === null || typeof message !== 'object') continue;
      this.#emit('message', message);
      if (typeof message.method === 'string') {
        if (message.id === undefined || message.id === null) onNotification(message);
        else this.#request(ws, message);
      } else if (message.id !== undefined && message.id !== null) {
        this.#response(message);
      }
    }
  }

  #response(message) {
    const id = String(message.id);
    const entry = this.#pending.get(id);
    if (!entry) {
      this.#log('response to no request of ours:', id);
      return;
    }
    this.#pending.delete(id);
    clearTimeout(entry.timer);
    if (message.error) {
      const { code, message: text, data } = message.error;
      entry.reject(new JsonRpcError(code ?? ErrorCodes.INTERNAL_ERROR, text ?? 'error', data));
    } else {
      entry.resolve(message.result);
    }
  }

  async #request(ws, request) {
    let reply;
    try {
      reply = { jsonrpc: '2.0', id: request.id, result: await this.#answer(request) };
    } catch (e) {
      const error =
        e instanceof JsonRpcError
          ? { code: e.code, message: e.message, ...(e.data !== undefined ? { data: e.data } : {}) }
          : { code: ErrorCodes.INTERNAL_ERROR, message: String(e?.message ?? e) };
      reply = { jsonrpc: '2.0', id: request.id, error };
    }
    // The connection may have ended while a tool ran: then nobody waits for this answer.
    if (ws !== this.#ws || ws.readyState !== OPEN) {
      this.#log(`dropping the answer to ${request.method} ${request.id}: the connection it came on is gone`);
      return;
    }
    try {
      this.#write(ws, reply);
    } catch (e) {
      this.#emit('error', connectionError(`cannot answer ${request.method}: ${e.message}`));
    }
  }

  async #answer(request) {
    const params = request.params ?? {};
    switch (request.method) {
      case 'tools/call': {
        this.#emit('toolCall', request);
        if (typeof params.name !== 'string') {
          throw new JsonRpcError(ErrorCodes.INVALID_PARAMS, 'tools/call needs a tool name');
        }
        return this.#executor.execute(params.name, params.arguments ?? {}, request);
      }
      case 'tools/list':
        this.#emit('toolsList', request);
        return { tools: this.#tools };
      case 'ping':
        return { pong: true };
      default:
        throw new JsonRpcError(ErrorCodes.METHOD_NOT_FOUND, `Method not found: ${request.method}`);
    }
  }

  #failPending(why) {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const entry of pending) {
      clearTimeout(entry.timer);
      entry.reject(connectionError(`${entry.method}: ${why}`));
    }
  }

  #emit(event, ...args) {
    for (const handler of [...(this.#listeners.get(event) ?? [])]) {
      try {
        handler(...args);
      } catch (e) {
        // A listener's bug must not break the connection.
        console.error(`[SocketNativeClient] a "${event}" listener threw:`, e);
      }
    }
  }

  #log(...args) {
    if (this.#options.debug) console.debug('[SocketNativeClient]', ...args);
  }
}

export default SocketNativeClient;
