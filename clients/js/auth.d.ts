// Types of auth.js: signing in with the gateway's providers, and the session.

import type {Container} from "./container.js";

/** A provider the gateway offers (GET /auth/providers). */
export interface SignInProvider {
  name: string;
  /** The button's words ("Sign in with …"). */
  label: string;
  authorizationURL: string;
  /** Present when the provider takes the code flow with PKCE from a browser; absent: the implicit flow. */
  tokenURL?: string;
  clientID: string;
  scope: string;
}

/** A signed-in session, as kept in storage. */
export interface Session {
  /** The Canopy token every request sends. */
  token: string;
  /** Its cnp_ prefix (what revokeToken takes). */
  prefix: string;
  user: {userRecordName: string; name: string | null; email: string | null} | null;
  /** When, in ms since the epoch. */
  signedInAt: number;
  provider: {name: string; tokenURL: string | null; clientID: string};
  /** The provider's refresh token, when it gave one: used to renew the session once the server refuses its token. */
  refreshToken: string | null;
}

/** What onAuthChange reports. */
export type AuthChangeEvent = "INITIAL_SESSION" | "SIGNED_IN" | "TOKEN_REFRESHED" | "SIGNED_OUT";

/** Where the session is kept: localStorage (default in browsers), sessionStorage, memory, or an object of your own. */
export type SessionStorageChoice = "local" | "session" | "memory" | {getItem(key: string): string | null; setItem(key: string, value: string): void; removeItem(key: string): void};

/** How a Container keeps its session (`new Container({auth})`). */
export interface AuthOptions {
  storage?: SessionStorageChoice;
  /** The storage key (default `canopy.session:<baseURL>`). */
  key?: string;
}

/** What signIn takes. */
export interface SignInOptions {
  /** The provider's name; may be left out when the gateway offers one. */
  provider?: string;
  /** "redirect" (default): leave for the provider and come back; "popup": call it from a click. */
  mode?: "redirect" | "popup";
  /** Where the provider sends the person back (default this page, without its query); registered with the provider. */
  redirectURI?: string;
  /** Where completeSignIn puts the address bar afterwards (default this page as it was). */
  returnTo?: string;
  signal?: AbortSignal;
}

/**
 * Signing in with the gateway's providers (OpenID Connect: the code flow
 * with PKCE when the provider has a token endpoint, else the implicit
 * flow; a nonce in both), the session kept and renewed, sign-out that
 * revokes. `container.auth`; the Container's own signIn, signOut,
 * completeSignIn and onAuthChange call it.
 */
export declare class Auth {
  constructor(container: Container, options?: AuthOptions);
  readonly container: Container;
  readonly key: string;
  /** The session, or null. */
  get session(): Session | null;
  /** The providers the gateway offers. */
  providers(options?: {signal?: AbortSignal}): Promise<SignInProvider[]>;
  /** Calls `callback` on every change, and once at first with INITIAL_SESSION; answers a function that stops it. */
  onAuthChange(callback: (event: AuthChangeEvent, session: Session | null, detail: {reason?: string}) => void): () => void;
  /** By redirect: never settles (the page leaves); by popup: the session. Throws a CanopyError the provider's or Canopy's refusal. */
  signIn(options?: SignInOptions): Promise<Session>;
  /** On the page the provider came back to: the session, or null when the URL holds no answer. */
  completeSignIn(href?: string): Promise<Session | null>;
  /** The server refused the token: renewed through the provider's refresh token, or signed out; the new token or null. */
  refresh(): Promise<string | null>;
  /** Revokes the session's token on the server and forgets it. */
  signOut(): Promise<void>;
}
