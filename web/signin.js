// Signing in: a person pastes a Canopy token (`canopy users add` or
// `canopy users token` prints one; an app can trade a provider's sign-in
// for one with `issueToken`). The token is checked with `me` before it is
// kept.

import {h, labelled, message, replace} from "./dom.js";
import {container as canopy, describe} from "./canopy.js";
import {remember, signOut} from "./session.js";
import {signInProviders, startSignIn} from "./oidc.js";

/** Renders the sign-in form into `container`; calls `done(me)` once signed in. */
export function renderSignIn(container, done, {heading = "Sign in", problem = null} = {}) {
  const token = h("input", {type: "password", autocomplete: "off", spellcheck: "false", required: true, name: "token"});
  const keep = h("input", {type: "checkbox", id: "keep-signed-in"});
  const feedback = h("div", {class: "feedback"}, problem ? message("error", problem) : null);
  const providers = h("div", {class: "providers"});
  const button = h("button", {type: "submit", class: "primary"}, "Sign in");
  const form = h("form", {class: "signin", "aria-labelledby": "signin-heading"},
    h("h2", {id: "signin-heading"}, heading),
    providers,
    labelled("Canopy token", token, "Paste the token that “canopy users add” or “canopy users token” printed for you. It stays in this browser tab."),
    h("div", {class: "control inline"}, keep, h("label", {for: "keep-signed-in"}, "Keep me signed in on this browser")),
    feedback,
    button);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = token.value.trim();
    if (!value) { replace(feedback, message("error", "Paste your token first.")); token.focus(); return; }
    button.disabled = true;
    remember(value, keep.checked);
    try {
      const me = await canopy.currentUser();
      done(me);
    } catch (error) {
      signOut();
      replace(feedback, message("error", error.code === "NOT_AUTHENTICATED" ? `That token was not accepted: ${error.message}` : describe(error)));
      token.focus();
    } finally {
      button.disabled = false;
    }
  });
  replace(container, form);
  token.focus();
  // The configured providers' buttons, above the token.
  signInProviders().then((list) => {
    if (!list.length) return;
    replace(providers, list.map((provider) => h("button", {type: "button", class: "primary provider", dataset: {provider: provider.name}, onclick: async () => {
      try { await startSignIn(provider); } catch (error) { replace(feedback, message("error", error.message)); }
    }}, provider.label)), h("p", {class: "hint"}, "Or use a Canopy token:"));
  });
}
