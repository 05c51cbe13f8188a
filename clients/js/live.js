// Live change feeds over one WebSocket (graphql-transport-ws at /graphql),
// each subscription an async iterator. The socket opens with the first
// subscription and closes with the last; when it drops it reopens with a
// growing pause and every subscription resumes from the last token it
// delivered, so nothing committed meanwhile is skipped. The token goes in
// connection_init, never in the URL.

import {CanopyError, ErrorCode, errorFromGraphQL} from "./errors.js";
import {parseJSON, stringifyJSON} from "./values.js";

/**
 * In Node, a connection pool of the socket's own. Node's WebSocket
 * (undici) sends its handshake on an idle keep-alive connection of fetch's
 * pool when there is one, and the gateway (SwiftNIO's upgrade handler)
 * upgrades only a connection's first request: the handshake would be
 * answered 400. Browsers always open a new connection. Answers undefined
 * outside Node or with another WebSocket class.
 */
async function ownConnection(WebSocketClass) {
  if (!globalThis.process?.versions?.node || WebSocketClass !== globalThis.WebSocket) return undefined;
  const key = Symbol.for("undici.globalDispatcher.1");
  if (!globalThis[key]) await fetch("data:,").catch(() => {});   // loads undici, which sets its global Agent
  const Agent = globalThis[key]?.constructor;
  return Agent ? new Agent({pipelining: 0}) : undefined;
}

export class LiveConnection {
  /** transport: the container's (base URL, tokens); WebSocketClass: the WebSocket constructor to use. */
  constructor(transport, WebSocketClass, {minimumDelay = 250, maximumDelay = 10_000} = {}) {
    this.transport = transport;
    this.WebSocketClass = WebSocketClass;
    this.minimumDelay = minimumDelay;
    this.maximumDelay = maximumDelay;
    this.socket = null;
    this.acknowledged = false;
    this.subscriptions = new Map();
    this.nextID = 1;
    this.delay = minimumDelay;
    this.refusals = 0;
    this.reconnectTimer = null;
    /** How many times the socket was opened again after a drop (for tests and status displays). */
    this.reconnects = 0;
    this.listeners = new Set();
    /** True while the socket is open and acknowledged. */
    this.connected = false;
  }

  /**
   * Calls `listener(connected)` when the socket is acknowledged (true) and
   * when it drops (false); answers a function that removes the listener.
   * A sync engine sends what waits as soon as the server is back.
   */
  onConnectionChange(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  setConnected(connected) {
    if (this.connected === connected) return;
    this.connected = connected;
    for (const listener of [...this.listeners]) {
      try { listener(connected); } catch { /* a listener's own failure */ }
    }
  }

  /**
   * An async iterator of the subscription's events (`data[field]`). The
   * variable named by `resume` is set to each event's token, so a reconnect
   * continues from the last event delivered. Ends when `signal` aborts or
   * the loop breaks; throws a CanopyError the server sent for it.
   */
  subscribe(query, variables, {field, resume = "since", signal} = {}) {
    const id = String(this.nextID++);
    const subscription = {id, query, variables: {...variables}, field, resume, queue: [], waiting: null, done: false, error: null};
    const finish = (error) => {
      if (subscription.done) return;
      subscription.done = true;
      subscription.error = error ?? null;
      this.end(id);
      subscription.waiting?.();
    };
    if (signal?.aborted) subscription.done = true;
    else {
      this.subscriptions.set(id, subscription);
      subscription.finish = finish;
      signal?.addEventListener("abort", () => finish(), {once: true});
      this.open();
      if (this.acknowledged) this.send(subscription);
    }
    const connection = this;
    return {
      [Symbol.asyncIterator]() { return this; },
      async next() {
        for (;;) {
          if (subscription.queue.length > 0) return {value: subscription.queue.shift(), done: false};
          if (subscription.done) {
            if (subscription.error) { const error = subscription.error; subscription.error = null; throw error; }
            return {value: undefined, done: true};
          }
          await new Promise((resolve) => { subscription.waiting = resolve; });
          subscription.waiting = null;
        }
      },
      async return() { finish(); return {value: undefined, done: true}; },
      /** Ends this subscription. */
      close() { finish(); },
      get connection() { return connection; },
    };
  }

  /** Stops one subscription: `complete` to the server, and the socket closes with the last one. */
  end(id) {
    if (!this.subscriptions.delete(id)) return;
    if (this.acknowledged) this.socket?.send(JSON.stringify({id, type: "complete"}));
    if (this.subscriptions.size === 0) this.close();
  }

  async open() {
    if (this.socket || this.opening) return;
    this.opening = true;
    let token;
    try {
      token = await this.transport.token(this.refusals > 0);
    } catch (error) {
      this.opening = false;
      this.failAll(new CanopyError(ErrorCode.NOT_AUTHENTICATED, `The token provider failed: ${error?.message ?? error}`, {cause: error}));
      return;
    }
    this.opening = false;
    if (this.subscriptions.size === 0) return;
    if (!this.WebSocketClass) {
      this.failAll(new CanopyError(ErrorCode.CONFIGURATION_ERROR, "No WebSocket here for live changes: pass Container({WebSocket}) (Node 20: run with --experimental-websocket, or pass the ws package's class)"));
      return;
    }
    const url = this.transport.baseURL.replace(/^http/, "ws") + "/graphql";
    let socket, dispatcher;
    try {
      dispatcher = await ownConnection(this.WebSocketClass);
      if (this.socket || this.subscriptions.size === 0) return;   // opened or ended meanwhile
      socket = dispatcher
        ? new this.WebSocketClass(url, {protocols: ["graphql-transport-ws"], dispatcher})
        : new this.WebSocketClass(url, "graphql-transport-ws");
    } catch (error) {
      this.failAll(new CanopyError(ErrorCode.NETWORK_FAILURE, `Cannot open ${url}: ${error?.message ?? error}`, {cause: error}));
      return;
    }
    this.socket = socket;
    this.acknowledged = false;
    socket.addEventListener("open", () => {
      const payload = token ? {Authorization: `Bearer ${token}`} : {};
      socket.send(JSON.stringify({type: "connection_init", payload}));
    });
    socket.addEventListener("message", (event) => this.receive(socket, event.data));
    let ended = false;
    const end = (code) => {
      if (ended) return;
      ended = true;
      dispatcher?.close?.().catch?.(() => {});
      this.closed(socket, code);
    };
    socket.addEventListener("close", (event) => end(event.code));
    // Node's WebSocket reports a refused handshake with an error and no close.
    socket.addEventListener("error", () => { if (socket.readyState !== 1) end(1006); });
  }

  receive(socket, text) {
    if (socket !== this.socket) return;
    let message;
    try { message = parseJSON(String(text)); } catch { return; }
    switch (message.type) {
    case "connection_ack":
      this.acknowledged = true;
      this.delay = this.minimumDelay;
      this.refusals = 0;
      for (const subscription of this.subscriptions.values()) this.send(subscription);
      this.setConnected(true);
      break;
    case "ping":
      socket.send(JSON.stringify({type: "pong"}));
      break;
    case "next": {
      const subscription = this.subscriptions.get(message.id);
      if (!subscription) return;
      const errors = message.payload?.errors;
      if (errors?.length) { subscription.finish(errorFromGraphQL(errors[0])); return; }
      const value = message.payload?.data?.[subscription.field];
      if (value === undefined) return;
      if (subscription.resume && value?.token) subscription.variables[subscription.resume] = value.token;
      subscription.queue.push(value);
      subscription.waiting?.();
      break;
    }
    case "error": {
      const subscription = this.subscriptions.get(message.id);
      subscription?.finish(errorFromGraphQL(Array.isArray(message.payload) ? message.payload[0] : message.payload));
      break;
    }
    case "complete": {
      this.subscriptions.get(message.id)?.finish();
      break;
    }
    }
  }

  closed(socket, code) {
    if (socket !== this.socket) return;
    this.socket = null;
    this.acknowledged = false;
    this.setConnected(false);
    if (this.subscriptions.size === 0) return;
    if (code === 4403 || code === 4401) {
      // The token was refused: ask the provider once for a new one; a second refusal ends every subscription.
      this.refusals += 1;
      if (this.refusals > 1 || !this.transport.tokenProvider) {
        this.failAll(new CanopyError(ErrorCode.NOT_AUTHENTICATED, `The server refused the token for live changes (WebSocket closed with ${code}).`));
        return;
      }
      this.open();
      return;
    }
    if (code === 4400 || code === 4409 || code === 4429) {
      this.failAll(new CanopyError(ErrorCode.BAD_REQUEST, `The server closed the live connection (${code}).`));
      return;
    }
    this.reconnectTimer = setTimeout(() => { this.reconnectTimer = null; this.reconnects += 1; this.open(); }, this.delay);
    this.delay = Math.min(this.delay * 2, this.maximumDelay);
  }

  send(subscription) {
    this.socket.send(stringifyJSON({id: subscription.id, type: "subscribe", payload: {query: subscription.query, variables: subscription.variables}}));
  }

  failAll(error) {
    for (const subscription of [...this.subscriptions.values()]) subscription.finish(error);
  }

  /** Ends every subscription and the socket. */
  close() {
    for (const subscription of [...this.subscriptions.values()]) subscription.finish();
    if (this.reconnectTimer) { clearTimeout(this.reconnectTimer); this.reconnectTimer = null; }
    const socket = this.socket;
    this.socket = null;
    this.acknowledged = false;
    this.setConnected(false);
    try { socket?.close(1000); } catch { /* already closing */ }
  }
}
