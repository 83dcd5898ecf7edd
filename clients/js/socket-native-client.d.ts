// Type declarations of socket-native-client.js.

/** The protocol version sent when none is given: "1.0.0". */
export declare const PROTOCOL_VERSION: string;

export declare const ErrorCodes: Readonly<{
  PARSE_ERROR: -32700;
  INVALID_REQUEST: -32600;
  METHOD_NOT_FOUND: -32601;
  INVALID_PARAMS: -32602;
  INTERNAL_ERROR: -32603;
  CONNECTION_ERROR: -32000;
}>;

/** An error response of the server, or a connection failure of the client (code -32000). */
export declare class JsonRpcError extends Error {
  constructor(code: number, message: string, data?: unknown);
  readonly name: 'JsonRpcError';
  code: number;
  data?: unknown;
}

export type JsonSchema = { [key: string]: unknown };

/** A tool as `tools/register` sends it (MCP's tool shape). */
export interface Tool {
  name: string;
  title?: string;
  description?: string;
  /** Defaults to `{ "type": "object" }`. */
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  annotations?: { [key: string]: unknown };
  [key: string]: unknown;
}

/** A tool with its handler, for registerTools: the handler is registered, not sent. */
export interface ToolWithHandler extends Tool {
  handler?: ToolHandler;
}

export type ContentItem =
  | { type: 'text'; text: string; [key: string]: unknown }
  | { type: 'image' | 'audio'; data: string; mimeType: string; [key: string]: unknown }
  | { type: 'resource'; resource: { [key: string]: unknown }; [key: string]: unknown }
  | { type: 'resource_link'; uri: string; [key: string]: unknown };

/** What a tool call answers. */
export interface ToolResult {
  content: ContentItem[];
  isError: boolean;
  structuredContent?: unknown;
  [key: string]: unknown;
}

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: string | number;
  method: string;
  params?: any;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: any;
}

export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: string | number | null;
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** A forwarded `tools/call`: `params` is `{ name, arguments }`. */
export interface ToolCallRequest extends JsonRpcRequest {
  method: 'tools/call';
  params: { name: string; arguments?: { [key: string]: unknown }; [key: string]: unknown };
}

/**
 * Answers a call. Its value becomes the tool result: a string → one text item; a
 * `{content: [...]}` result or content item(s) → as they are; `undefined` → no content;
 * anything else → its JSON as text. Throwing → `isError: true` with the message.
 */
export type ToolHandler = (
  args: { [key: string]: any },
  request?: ToolCallRequest,
) => unknown | Promise<unknown>;

/** Turns a handler's value into a tool result (see ToolHandler). */
export declare function toToolResult(value: unknown): ToolResult;
/** Turns a thrown value into `{content: [{type: 'text', text: message}], isError: true}`. */
export declare function toErrorResult(error: unknown): ToolResult;

/** The handlers of a client's tools. */
export declare class ToolExecutor {
  registerHandler(name: string, handler: ToolHandler): void;
  unregisterHandler(name: string): boolean;
  hasHandler(name: string): boolean;
  getHandlerNames(): string[];
  /** Rejects with a JsonRpcError (-32601) only when no handler has that name. */
  execute(name: string, args?: { [key: string]: unknown }, request?: ToolCallRequest): Promise<ToolResult>;
}

/** The constructor of a WHATWG-style WebSocket (the platform's, or the `ws` package's). */
export type WebSocketConstructor = new (url: string) => {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: any) => void) | null;
  onmessage: ((event: { data: any }) => void) | null;
  onerror: ((event: any) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
};

export interface SocketNativeClientOptions {
  /** ws:// or wss:// URL; a URL without a path connects to `/ws`. */
  serverUrl: string;
  /** Session identifier; generated when absent. */
  sessionId?: string;
  /** Protocol version. Default "1.0.0". */
  version?: string;
  /** Reconnect when a connection that was up ends. Default true. */
  autoReconnect?: boolean;
  /** Base reconnection delay in ms, doubled after each failed attempt (at most 30 s). Default 1000. */
  reconnectDelay?: number;
  /** Reconnection attempts before giving up. Default 5. */
  maxReconnectAttempts?: number;
  /** Time for the connection and handshake in ms. Default 10000. */
  connectionTimeout?: number;
  /** Keep-alive `ping` interval in ms (0 disables). Default 30000. */
  pingInterval?: number;
  /** Log to console.debug. Default false. */
  debug?: boolean;
  /** `browser` (tool provider) or `agent` (tool consumer). Default "browser". */
  clientType?: 'browser' | 'agent';
  /** Sent as `?token=`: browser-mcpd requires its token (from its discovery file) from agents. */
  token?: string;
  /** The WebSocket constructor to use. Default `globalThis.WebSocket`. */
  WebSocket?: WebSocketConstructor;
}

export interface SocketNativeClientEvents {
  connect: () => void;
  /** Each time a connection that was up ends; once more, code 1006, when reconnecting gives up. */
  disconnect: (code: number, reason: string) => void;
  error: (error: Error) => void;
  message: (message: JsonRpcMessage) => void;
  toolCall: (request: ToolCallRequest) => void;
  toolsList: (request: JsonRpcRequest) => void;
  /** Extension: a reconnection attempt is scheduled in `delayMs`. */
  reconnecting: (attempt: number, delayMs: number) => void;
}

export declare class SocketNativeClient {
  constructor(options: SocketNativeClientOptions);
  /** Open, wait for `welcome`, `hello`, register the tools set before. */
  connect(): Promise<void>;
  /** Close with 1000 and stop reconnecting. */
  disconnect(): void;
  isConnected(): boolean;
  getSessionId(): string;
  /** Replace the tools this client offers; sent now if connected, and after every reconnection. */
  registerTools(tools: ToolWithHandler[]): Promise<void>;
  getExecutor(): ToolExecutor;
  registerHandler(name: string, handler: ToolHandler): void;
  /** Resolves with the response's `result`; rejects with a JsonRpcError. */
  sendRequest<T = any>(method: string, params?: unknown, options?: { timeout?: number }): Promise<T>;
  /** Send a message without waiting for an answer. */
  send(message: JsonRpcMessage | string): Promise<void>;
  on<E extends keyof SocketNativeClientEvents>(event: E, handler: SocketNativeClientEvents[E]): void;
  off<E extends keyof SocketNativeClientEvents>(event: E, handler: SocketNativeClientEvents[E]): void;
}

export default SocketNativeClient;
