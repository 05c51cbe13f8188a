// Signing people in with the providers the gateway is configured with
// (`--auth-config`, a provider's "signIn" block; GET /auth/providers):
// OpenID Connect with PKCE (the authorization code flow, the code
// exchanged by the browser as a public client) when the provider has a
// token endpoint, else the implicit flow; both by redirect or in a popup,
// both with a nonce the provider signs into the id token. The id token is
// traded with `issueToken` (sent with the raw nonce in Canopy-Nonce) for a
// Canopy token; that token is the session, kept in storage the app picks
// (localStorage by default), and refreshed through the provider's refresh
// token when the server stops accepting it. Sign-out revokes it.

import {CanopyError, ErrorCode} from "./errors.js";

const pendingKey = "canopy.signIn";
const popupName = "canopy-sign-in";

function base64url(bytes) {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random(bytes) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

async function sha256(text) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

function hex(bytes) {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** A Storage-like object in memory (Node, or a page that keeps nothing). */
class MemorySessionStorage {
  constructor() { this.items = new Map(); }
  getItem(key) { return this.items.get(key) ?? null; }
  setItem(key, value) { this.items.set(key, String(value)); }
  removeItem(key) { this.items.delete(key); }
}

/** The Storage a session is kept in, from the app's choice. */
function storageFor(choice) {
  if (choice && typeof choice === "object") {
    if (typeof choice.getItem !== "function" || typeof choice.setItem !== "function" || typeof choice.removeItem !== "function") {
      throw new TypeError("auth storage must be \"local\", \"session\", \"memory\" or an object with getItem, setItem and removeItem");
    }
    return choice;
  }
  const chosen = choice ?? "local";
  if (!["local", "session", "memory"].includes(chosen)) throw new TypeError(`auth storage ${chosen}: "local", "session" or "memory"`);
  const storage = chosen === "local" ? globalThis.localStorage : chosen === "session" ? globalThis.sessionStorage : null;
  return storage ?? new MemorySessionStorage();
}

/**
 * The sign-in state of one Container (`container.auth`). Events to
 * `onAuthChange(callback)`: "INITIAL_SESSION" (once, with what storage
 * held), "SIGNED_IN", "TOKEN_REFRESHED", "SIGNED_OUT" (with a reason when
 * the server ended it).
 */
export class Auth {
  /**
   * storage: where the session is kept ("local", default in browsers;
   * "session" for this tab only; "memory"; or any object with getItem,
   * setItem and removeItem). key: its key (default per gateway).
   */
  constructor(container, {storage, key} = {}) {
    this.container = container;
    this.storage = storageFor(storage);
    this.key = key ?? `canopy.session:${container.baseURL}`;
    this.listeners = new Set();
    this.refreshing = null;
    this.current = this.read();
    this.initialSent = false;
    // Another tab signing in or out with the same storage.
    if (this.storage === globalThis.localStorage && typeof globalThis.addEventListener === "function") {
      globalThis.addEventListener("storage", (event) => {
        if (event.key !== this.key) return;
        const before = this.current;
        this.current = this.read();
        if (!before && this.current) this.emit("SIGNED_IN");
        else if (before && !this.current) this.emit("SIGNED_OUT", {reason: "signed out in another window"});
        else if (before?.token !== this.current?.token) this.emit("TOKEN_REFRESHED");
      });
    }
  }

  /** The session: {token, prefix, provider, user: {userRecordName, name, email}, signedInAt}, or null. */
  get session() { return this.current; }

  /** The providers the gateway offers: [{name, label, authorizationURL, tokenURL?, clientID, scope}]. */
  async providers({signal} = {}) {
    let response;
    try {
      response = await this.container.transport.fetch(`${this.container.baseURL}/auth/providers`, {signal});
    } catch (error) {
      throw new CanopyError(ErrorCode.NETWORK_FAILURE, `The server at ${this.container.baseURL} cannot be reached: ${error?.message ?? error}`, {cause: error});
    }
    if (!response.ok) throw new CanopyError(ErrorCode.BAD_REQUEST, `GET /auth/providers answered HTTP ${response.status}`, {status: response.status});
    return (await response.json()).providers ?? [];
  }

  /**
   * Calls `callback(event, session)` on every change, and at once (after
   * this returns) with "INITIAL_SESSION" and what storage held. Answers a
   * function that stops it.
   */
  onAuthChange(callback) {
    this.listeners.add(callback);
    queueMicrotask(() => { if (this.listeners.has(callback)) callback("INITIAL_SESSION", this.current, {}); });
    return () => this.listeners.delete(callback);
  }

  emit(event, detail = {}) {
    for (const listener of this.listeners) {
      try { listener(event, this.current, detail); } catch { /* a listener's failure is its own */ }
    }
  }

  /**
   * Signs in with `provider` (its name; default the only one). mode
   * "redirect" (default) leaves the page for the provider's and comes back
   * to `redirectURI` (default this page), where `completeSignIn()` finishes;
   * its promise never settles. mode "popup" opens the provider in a popup
   * (call it from a click) and answers the session.
   */
  async signIn({provider, mode = "redirect", redirectURI, returnTo, signal} = {}) {
    if (!globalThis.crypto?.subtle) {
      throw new CanopyError(ErrorCode.BAD_REQUEST, "Signing in with a provider needs a secure page (HTTPS, or localhost / 127.0.0.1).");
    }
    if (mode !== "redirect" && mode !== "popup") throw new TypeError(`mode must be "redirect" or "popup", not ${mode}`);
    const providers = await this.providers({signal});
    const chosen = provider === undefined && providers.length === 1 ? providers[0] : providers.find((entry) => entry.name === provider);
    if (!chosen) {
      const names = providers.map((entry) => entry.name).join(", ") || "none (the gateway's --auth-config has no signIn block)";
      throw new CanopyError(ErrorCode.INVALID_ARGUMENTS, provider === undefined
        ? `say which provider to sign in with: ${names}` : `no provider ${provider} to sign in with; the gateway offers ${names}`);
    }
    const here = new URL(globalThis.location.href);
    const redirect = redirectURI ?? `${here.origin}${here.pathname}`;
    const nonce = random(32), state = random(24), verifier = chosen.tokenURL ? random(48) : null;
    const parameters = {
      response_type: chosen.tokenURL ? "code" : "id_token", client_id: chosen.clientID, redirect_uri: redirect,
      scope: chosen.scope, state, nonce: hex(await sha256(nonce)),
    };
    if (chosen.tokenURL) {
      Object.assign(parameters, {code_challenge: base64url(await sha256(verifier)), code_challenge_method: "S256"});
    } else {
      parameters.response_mode = "fragment";
    }
    const url = new URL(chosen.authorizationURL);
    for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
    const pending = {state, nonce, verifier, provider: chosen, redirectURI: redirect,
      returnTo: returnTo ?? `${here.pathname}${here.search}${here.hash}`};
    if (mode === "popup") return this.signInWithPopup(url, pending, signal);
    globalThis.sessionStorage.setItem(pendingKey, JSON.stringify(pending));
    globalThis.location.assign(url.toString());
    return new Promise(() => {});   // the page is leaving
  }

  async signInWithPopup(url, pending, signal) {
    const popup = globalThis.open(url.toString(), popupName, "popup,width=480,height=640");
    if (!popup) throw new CanopyError(ErrorCode.BAD_REQUEST, "The sign-in popup was blocked: call signIn({mode: \"popup\"}) from a click, or use mode \"redirect\".");
    // The popup is on the provider's origin (unreadable) until it comes back to the redirect URI, on ours.
    const answer = await new Promise((resolve, reject) => {
      const timer = setInterval(() => {
        if (signal?.aborted) { clearInterval(timer); popup.close(); reject(signal.reason); return; }
        if (popup.closed) { clearInterval(timer); reject(new CanopyError(ErrorCode.BAD_REQUEST, "The sign-in window was closed before signing in.")); return; }
        let href;
        try { href = popup.location.href; } catch { return; }   // still at the provider
        if (!href || !href.startsWith(pending.redirectURI)) return;
        clearInterval(timer);
        popup.close();
        resolve(new URL(href));
      }, 100);
    });
    return this.finish(answer, pending);
  }

  /**
   * Finishes a redirect sign-in on the page the provider came back to:
   * answers null when the URL holds no answer, else the session (and
   * removes the answer from the address bar and history). Throws a
   * CanopyError for an answer this tab did not ask for or the provider's
   * refusal.
   */
  async completeSignIn(href = globalThis.location?.href) {
    // In the sign-in popup itself the opener finishes: leave its address alone.
    if (globalThis.name === popupName && globalThis.opener) return null;
    const url = new URL(href);
    const fragment = new URLSearchParams(url.hash.replace(/^#/, ""));
    const answered = url.searchParams.has("code") || url.searchParams.has("error") || fragment.has("id_token") || fragment.has("error");
    if (!answered) return null;
    const pending = JSON.parse(globalThis.sessionStorage?.getItem(pendingKey) ?? "null");
    globalThis.sessionStorage?.removeItem(pendingKey);
    if (globalThis.history && globalThis.location?.href === href) {
      globalThis.history.replaceState(null, "", pending?.returnTo ?? url.pathname);   // the code or token leaves the address bar
    }
    return this.finish(url, pending);
  }

  async finish(url, pending) {
    const fragment = new URLSearchParams(url.hash.replace(/^#/, ""));
    const answer = url.searchParams.has("code") || url.searchParams.has("error") ? url.searchParams : fragment;
    // The state first: an answer this tab did not ask for says nothing, not even its error.
    if (!pending || answer.get("state") !== pending.state) {
      throw new CanopyError(ErrorCode.NOT_AUTHENTICATED, "That sign-in was not started from this tab (its state does not match). Sign in again.");
    }
    if (answer.has("error")) {
      throw new CanopyError(ErrorCode.NOT_AUTHENTICATED, `The provider did not sign you in: ${answer.get("error_description") ?? answer.get("error")}.`);
    }
    let idToken = answer.get("id_token"), refreshToken = null;
    if (pending.provider.tokenURL) {
      const tokens = await this.exchange(pending.provider, {grant_type: "authorization_code", code: answer.get("code") ?? "",
        redirect_uri: pending.redirectURI, client_id: pending.provider.clientID, code_verifier: pending.verifier});
      idToken = tokens.id_token;
      refreshToken = tokens.refresh_token ?? null;
    }
    const session = await this.trade(idToken, pending.nonce, pending.provider, refreshToken);
    this.store(session);
    this.emit("SIGNED_IN");
    return session;
  }

  /** POSTs a grant to the provider's token endpoint (a public client: no secret). */
  async exchange(provider, form) {
    let response;
    try {
      response = await this.container.transport.fetch(provider.tokenURL, {
        method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: new URLSearchParams(form).toString(),
      });
    } catch (error) {
      throw new CanopyError(ErrorCode.NETWORK_FAILURE, `The provider's token endpoint ${provider.tokenURL} cannot be reached: ${error?.message ?? error}`, {cause: error});
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok || !body.id_token) {
      throw new CanopyError(ErrorCode.NOT_AUTHENTICATED, `The provider did not give an id token (${body.error_description ?? body.error ?? `HTTP ${response.status}`}).`, {status: response.status});
    }
    return body;
  }

  /** One GraphQL request with a bearer of our choosing (not the session's): answers `data`, or throws. */
  async call(bearer, query, {nonce = null, variables = {}} = {}) {
    const headers = {"Content-Type": "application/json", Authorization: `Bearer ${bearer}`};
    if (nonce) headers["Canopy-Nonce"] = nonce;
    let response;
    try {
      response = await this.container.transport.fetch(`${this.container.baseURL}/graphql`, {method: "POST", headers, body: JSON.stringify({query, variables})});
    } catch (error) {
      throw new CanopyError(ErrorCode.NETWORK_FAILURE, `The server at ${this.container.baseURL} cannot be reached: ${error?.message ?? error}`, {cause: error});
    }
    const body = await response.json().catch(() => ({}));
    if (!body?.data || body.errors?.length) {
      const first = body?.errors?.[0];
      throw new CanopyError(first?.extensions?.code ?? ErrorCode.NOT_AUTHENTICATED, first?.message ?? `HTTP ${response.status}`, {status: response.status});
    }
    return body.data;
  }

  /** Trades a provider's id token for a Canopy token (issueToken, the raw nonce in Canopy-Nonce), and reads who it is. */
  async trade(idToken, nonce, provider, refreshToken) {
    let issued;
    try {
      issued = (await this.call(idToken, "mutation { issueToken { token prefix } }", {nonce})).issueToken;
    } catch (error) {
      if (error.code === ErrorCode.NETWORK_FAILURE) throw error;
      throw new CanopyError(error.code, `Canopy did not accept the provider's sign-in: ${error.message}`, {status: error.status});
    }
    const user = (await this.call(issued.token, "{ me { userRecordName name email } }")).me;
    return {
      token: issued.token, prefix: issued.prefix, user, signedInAt: Date.now(),
      provider: {name: provider.name, tokenURL: provider.tokenURL ?? null, clientID: provider.clientID}, refreshToken,
    };
  }

  /**
   * The server refused the session's token: a new one through the
   * provider's refresh token (TOKEN_REFRESHED), or signed out (SIGNED_OUT
   * with the reason). Answers the new token or null. One at a time.
   */
  refresh() {
    this.refreshing ??= this.refreshOnce().finally(() => { this.refreshing = null; });
    return this.refreshing;
  }

  async refreshOnce() {
    const session = this.current;
    if (!session) return null;
    if (!session.refreshToken || !session.provider?.tokenURL) {
      this.end("the server no longer accepts this sign-in");
      return null;
    }
    try {
      const tokens = await this.exchange(session.provider, {grant_type: "refresh_token", refresh_token: session.refreshToken, client_id: session.provider.clientID});
      const renewed = await this.trade(tokens.id_token, null, session.provider, tokens.refresh_token ?? session.refreshToken);
      this.store(renewed);
      this.emit("TOKEN_REFRESHED");
      this.revoke(session.prefix, renewed.token);   // the old one, if it still lives
      return renewed.token;
    } catch (error) {
      if (error?.code === ErrorCode.NETWORK_FAILURE) throw error;   // still signed in; try again later
      this.end(`the provider did not renew the sign-in: ${error?.message ?? error}`);
      return null;
    }
  }

  /** Signs out: revokes the session's token on the server, forgets it here, and tells listeners. */
  async signOut() {
    const session = this.current;
    if (!session) return;
    await this.revoke(session.prefix, session.token);
    this.end(null);
  }

  async revoke(prefix, token) {
    try {
      await this.call(token, "mutation($prefix: String!) { revokeToken(prefix: $prefix) }", {variables: {prefix}});
    } catch { /* signed out here either way (a token already refused needs no revoking) */ }
  }

  end(reason) {
    this.store(null);
    this.emit("SIGNED_OUT", reason ? {reason} : {});
  }

  read() {
    try {
      return JSON.parse(this.storage.getItem(this.key) ?? "null");
    } catch {
      return null;
    }
  }

  store(session) {
    this.current = session;
    if (session) this.storage.setItem(this.key, JSON.stringify(session));
    else this.storage.removeItem(this.key);
  }
}
