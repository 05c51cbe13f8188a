// Signing in with an OpenID Connect provider (when `--auth-config` gives
// it a "signIn" block): the implicit flow, `response_type=id_token`, back
// to this site's / with the token in the URL's fragment (never sent to a
// server, and removed from the address bar at once). The id token is then
// traded with `issueToken` for a Canopy token, sent with the raw nonce
// (`Canopy-Nonce`) whose SHA-256 the provider put in the token, so a token
// lifted from elsewhere cannot be replayed here.

import {remember, rememberIssued, setNext} from "./session.js";

const PENDING = "canopy.oidc";

function random(bytes) {
  const values = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(values, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The providers the console may offer ([] when none is configured). */
export async function signInProviders() {
  try {
    const response = await fetch("/console/sign-in.json");
    if (!response.ok) return [];
    return (await response.json()).providers ?? [];
  } catch {
    return [];
  }
}

/** Leaves for the provider's sign-in page; throws when this page cannot. */
export async function startSignIn(provider) {
  if (!window.isSecureContext || !crypto.subtle) {
    throw new Error("Signing in with a provider needs this page over HTTPS (or on localhost).");
  }
  const nonce = random(32), state = random(16);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(nonce)));
  const hashed = Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
  sessionStorage.setItem(PENDING, JSON.stringify({state, nonce, provider: provider.name}));
  setNext(location.pathname + location.hash);
  const url = new URL(provider.authorizationURL);
  for (const [key, value] of Object.entries({
    response_type: "id_token", response_mode: "fragment", client_id: provider.clientID,
    redirect_uri: `${location.origin}/`, scope: provider.scope, state, nonce: hashed,
  })) url.searchParams.set(key, value);
  location.assign(url.toString());
}

/**
 * Finishes a sign-in the provider sent back: answers null when the URL
 * holds none, {signedIn: true}, or {error: "what went wrong"}.
 */
export async function finishSignIn() {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
  if (!fragment.has("id_token") && !fragment.has("error")) return null;
  history.replaceState(null, "", location.pathname);   // the token leaves the address bar and history
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? "null");
  sessionStorage.removeItem(PENDING);
  // The state first: an answer this tab did not ask for says nothing, not even its error's words.
  if (!pending || fragment.get("state") !== pending.state) {
    return {error: "That sign-in was not started from this tab (its state does not match). Try again."};
  }
  if (fragment.has("error")) {
    return {error: `The provider did not sign you in (${fragment.get("error")}).`};
  }
  let body;
  try {
    const response = await fetch("/graphql", {
      method: "POST",
      headers: {"Content-Type": "application/json", "Authorization": `Bearer ${fragment.get("id_token")}`, "Canopy-Nonce": pending.nonce},
      body: JSON.stringify({query: "mutation { issueToken { token prefix } }"}),
    });
    body = await response.json();
  } catch {
    return {error: "The server cannot be reached to finish signing in."};
  }
  const issued = body?.data?.issueToken;
  if (!issued?.token) return {error: `Canopy did not accept the provider's sign-in: ${body?.errors?.[0]?.message ?? "no token"}`};
  remember(issued.token, false);
  rememberIssued(issued.prefix, false);
  return {signedIn: true};
}
