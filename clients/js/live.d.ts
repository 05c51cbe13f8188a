// Types of live.js: live change feeds over one WebSocket
// (graphql-transport-ws at /graphql), each subscription an async iterator.
// Apps use them through Database.watchZone and watchDatabase.

import type {GraphQLVariables, Transport} from "./transport.js";

/**
 * A WebSocket class: the global one (browsers, Node 22; Node 20 with
 * --experimental-websocket) or a compatible one such as the ws package's.
 */
export type WebSocketConstructor = new (url: string, protocols?: any) => object;

/** The pause before reopening a dropped socket: from minimumDelay, doubling up to maximumDelay (ms). */
export interface LiveConnectionOptions {
  minimumDelay?: number;
  maximumDelay?: number;
}

/** What subscribe needs besides the document and its variables. */
export interface SubscribeOptions {
  /** The field of `data` each event is read from ("zoneChanged", …). */
  field: string;
  /** The variable set to each event's token, so a reconnect resumes (default "since"; null: none). */
  resume?: string | null;
  /** Ends the subscription when aborted. */
  signal?: AbortSignal;
}

/**
 * A live feed: `for await` it; it ends when its signal aborts, when the
 * loop breaks or on close(), and throws the CanopyError that ended it.
 */
export interface LiveIterator<T> extends AsyncIterableIterator<T> {
  /** Ends this subscription. */
  close(): void;
}

/** A subscription as LiveConnection.subscribe answers it. */
export interface LiveSubscription<T = any> extends LiveIterator<T> {
  /** The connection it runs on. */
  readonly connection: LiveConnection;
}

/**
 * One WebSocket shared by every live subscription of a container: it opens
 * with the first and closes with the last; when it drops it reopens with a
 * growing pause, and every subscription resumes from its last token.
 */
export declare class LiveConnection {
  /** transport: the container's (base URL, tokens); WebSocketClass: the WebSocket constructor to use. */
  constructor(transport: Transport, WebSocketClass: WebSocketConstructor | null | undefined, options?: LiveConnectionOptions);
  transport: Transport;
  WebSocketClass: WebSocketConstructor | null | undefined;
  minimumDelay: number;
  maximumDelay: number;
  /** How many times the socket was opened again after a drop (for tests and status displays). */
  reconnects: number;
  /** True while the socket is open and acknowledged. */
  connected: boolean;
  /**
   * Calls `listener(connected)` when the socket is acknowledged (true) and
   * when it drops (false); answers a function that removes the listener.
   */
  onConnectionChange(listener: (connected: boolean) => void): () => void;
  /**
   * An async iterator of the subscription's events (`data[field]`). The
   * variable named by `resume` is set to each event's token, so a reconnect
   * continues from the last event delivered.
   */
  subscribe<T = any>(query: string, variables: GraphQLVariables, options: SubscribeOptions): LiveSubscription<T>;
  /** Ends every subscription and the socket. */
  close(): void;
}
