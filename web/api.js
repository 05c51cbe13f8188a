// The console's only way to the server: POST /graphql (and POST /assets),
// with the signed-in person's token, exactly as any other client calls it;
// and one WebSocket (graphql-transport-ws) for live changes. Row-level
// security decides everything these calls can see or do.

import {currentToken, issuedPrefix, signOut} from "./session.js";

/** An error the API answered, with its code (API.md §6). */
export class APIError extends Error {
  constructor(code, message, detail) {
    super(message);
    this.code = code;
    this.detail = detail;
  }
}

function signedOut(message) {
  signOut();
  window.dispatchEvent(new CustomEvent("canopy:signed-out", {detail: message}));
}

/**
 * Runs a query or mutation; answers `data`, or throws the first error.
 * Signed out, it goes without a token: the server then answers only the
 * public database's reads.
 */
export async function gql(query, variables = {}) {
  const token = currentToken();
  const headers = {"Content-Type": "application/json"};
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch("/graphql", {
      method: "POST",
      headers,
      body: JSON.stringify({query, variables}),
    });
  } catch (error) {
    throw new APIError("SERVICE_UNAVAILABLE", "The server cannot be reached. Check your connection and try again.");
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new APIError("INTERNAL_ERROR", `The server answered ${response.status} without a GraphQL response.`);
  }
  const error = body.errors?.[0];
  if (error) {
    const code = error.extensions?.code ?? "INTERNAL_ERROR";
    if (code === "NOT_AUTHENTICATED" && token) signedOut(error.message);
    throw new APIError(code, error.message, body);
  }
  return body.data;
}

/** Uploads a file's bytes (POST /assets); answers {uploadToken, size, sha256}. */
export async function upload(file) {
  const response = await fetch("/assets", {
    method: "POST",
    headers: {"Authorization": `Bearer ${currentToken()}`, "Content-Type": file.type || "application/octet-stream"},
    body: file,
  });
  let body = {};
  try { body = await response.json(); } catch { /* an answer without JSON */ }
  if (!response.ok) {
    const error = body.errors?.[0];
    throw new APIError(error?.extensions?.code ?? "INTERNAL_ERROR", error?.message ?? `The upload failed (HTTP ${response.status}).`);
  }
  return body;
}

/**
 * Live changes over one WebSocket: `subscribe(query, variables, handlers)`
 * answers a function that ends the subscription. The socket opens on the
 * first subscription and reconnects (every subscription starts again) when
 * it drops; the token goes in `connection_init`, never in the URL.
 */
class LiveChanges {
  constructor() {
    this.socket = null;
    this.acknowledged = false;
    this.subscriptions = new Map();
    this.nextID = 1;
    this.retry = 500;
  }

  subscribe(query, variables, handlers) {
    const id = String(this.nextID++);
    this.subscriptions.set(id, {query, variables, handlers});
    this.open();
    if (this.acknowledged) this.send(id);
    return () => {
      if (!this.subscriptions.delete(id)) return;
      if (this.acknowledged) this.socket.send(JSON.stringify({id, type: "complete"}));
    };
  }

  open() {
    if (this.socket) return;
    const token = currentToken();
    if (!token) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/graphql`, "graphql-transport-ws");
    this.socket = socket;
    this.acknowledged = false;
    socket.addEventListener("open", () => {
      socket.send(JSON.stringify({type: "connection_init", payload: {Authorization: `Bearer ${token}`}}));
    });
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(event.data);
      if (message.type === "connection_ack") {
        this.acknowledged = true;
        this.retry = 500;
        for (const id of this.subscriptions.keys()) this.send(id);
      } else if (message.type === "ping") {
        socket.send(JSON.stringify({type: "pong"}));
      } else if (message.type === "next") {
        const subscription = this.subscriptions.get(message.id);
        if (!subscription) return;
        // After a reconnect the feed resumes from the last page seen, not from the start.
        const token = message.payload.data?.change?.token;
        if (token) subscription.variables = {...subscription.variables, since: token};
        subscription.handlers.next?.(message.payload.data);
      } else if (message.type === "error") {
        const subscription = this.subscriptions.get(message.id);
        this.subscriptions.delete(message.id);
        const error = message.payload?.[0];
        subscription?.handlers.error?.(new APIError(error?.extensions?.code ?? "INTERNAL_ERROR", error?.message ?? "The subscription failed."));
      }
    });
    socket.addEventListener("close", (event) => {
      if (this.socket !== socket) return;   // an older socket's late close
      this.socket = null;
      this.acknowledged = false;
      if (event.code === 4403) { signedOut("Your sign-in is no longer accepted."); return; }
      if (this.subscriptions.size === 0) return;
      setTimeout(() => this.open(), this.retry);
      this.retry = Math.min(this.retry * 2, 10000);
    });
  }

  send(id) {
    const {query, variables} = this.subscriptions.get(id);
    this.socket.send(JSON.stringify({id, type: "subscribe", payload: {query, variables}}));
  }

  /** Ends every subscription and the socket (signing out). */
  close() {
    this.subscriptions.clear();
    this.socket?.close(1000);
    this.socket = null;
  }
}

export const live = new LiveChanges();

/** Signs out; a token the console made (a provider sign-in) is revoked first. */
export async function endSession() {
  const prefix = issuedPrefix();
  if (prefix) {
    try { await gql("mutation($prefix: String!) { revokeToken(prefix: $prefix) }", {prefix}); } catch { /* signed out either way */ }
  }
  live.close();
  signOut();
}

/** Human words for an API error, for a message box. */
export function describe(error) {
  if (!(error instanceof APIError)) return `Something went wrong: ${error?.message ?? error}`;
  switch (error.code) {
    case "PERMISSION_FAILURE": return `Not allowed: ${error.message}`;
    case "ZONE_NOT_FOUND": return "This zone does not exist or is no longer shared with you.";
    case "UNKNOWN_ITEM": return "This record does not exist or is no longer shared with you.";
    case "SERVICE_UNAVAILABLE": return error.message;
    default: return error.message;
  }
}

/**
 * Follows a change feed from now on: reads it over HTTP up to its end
 * (selecting only the token) and then subscribes from there, so every
 * `next` is a change made after the view was drawn. `feed` is
 * "zoneChanges" or "databaseChanges"; answers a function that stops.
 */
export function followChanges(feed, variables, onChange, onError) {
  let stop = null, stopped = false;
  const declarations = feed === "zoneChanges" ? "$scope: DatabaseScope!, $zone: ZoneID!, $since: String" : "$scope: DatabaseScope!, $since: String";
  const argumentsText = feed === "zoneChanges" ? "scope: $scope, zone: $zone, since: $since" : "scope: $scope, since: $since";
  const start = async () => {
    let since = null;
    try {
      for (;;) {
        const data = await gql(`query(${declarations}) { page: ${feed}(${argumentsText}, limit: 400) { token moreComing } }`, {...variables, since});
        since = data.page.token;
        if (!data.page.moreComing) break;
      }
    } catch (error) {
      if (!stopped) onError?.(error);
      return;
    }
    if (stopped) return;
    const subscription = feed === "zoneChanges" ? "zoneChanged" : "databaseChanged";
    const selection = feed === "zoneChanges" ? "token changed { recordName } deleted { recordName }" : "token";
    stop = live.subscribe(`subscription(${declarations}) { change: ${subscription}(${argumentsText}) { ${selection} } }`,
      {...variables, since}, {
        next: (data) => onChange(data.change),
        error: (error) => {
          if (stopped) return;
          // Away longer than the history is kept: follow from now, and say something may have changed.
          if (error.code === "CHANGE_TOKEN_EXPIRED") { start(); onChange({changed: [], deleted: [], expired: true}); return; }
          onError?.(error);
        },
      });
  };
  start();
  return () => { stopped = true; stop?.(); };
}
