// Signing in with an OpenID Connect provider (when `--auth-config` gives
// it a "signIn" block), through CanopyJS's signIn: the providers from
// GET /auth/providers, the flow the block asks for (the code flow with
// PKCE when it names a tokenURL, else the implicit flow), a nonce the
// provider signs into the id token, and the id token traded for a Canopy
// token. The console keeps that token as it keeps a pasted one
// (session.js); CanopyJS keeps nothing of its own here (memory storage).
// Back at the console's / (the one redirect URI), the person goes where
// they were (setNext / takeNext).

import {container as canopy} from "./canopy.js";
import {remember, rememberIssued, setNext} from "./session.js";

/** The providers the console may offer ([] when none is configured). */
export async function signInProviders() {
  try {
    return await canopy.signInProviders();
  } catch {
    return [];
  }
}

/** Leaves for the provider's sign-in page; throws when this page cannot. */
export async function startSignIn(provider) {
  setNext(location.pathname + location.hash);
  await canopy.signIn({provider: provider.name, redirectURI: `${location.origin}/`, returnTo: "/"});
}

/**
 * Finishes a sign-in the provider sent back: answers null when the URL
 * holds none, {signedIn: true}, or {error: "what went wrong"}.
 */
export async function finishSignIn() {
  let session;
  try {
    session = await canopy.completeSignIn();
  } catch (error) {
    return {error: error.message};
  }
  if (!session) return null;
  remember(session.token, false);
  rememberIssued(session.prefix, false);
  return {signedIn: true};
}
