// The Web Services sign-in (docs/WEB_SERVICES.md, "Signing people in"): a
// CloudKit web app sent the person here with a 421's redirectURL. Signed
// in to the console, they choose to continue; the console issues them a new
// token for the app (issueToken) and hands it back as CloudKit does:
// ?ckWebAuthToken=… on the API token's sign-in callback, or
// postMessage({ckSession, ckWebAuthToken}) to the window that opened this
// one, only if its origin is one the server allows (--cors-origin). CloudKit
// JS's sign-in button reads the message's ckSession; clients written from
// the reference read ckWebAuthToken: both carry the same token.
//   #/web-services/sign-in?container=C&environment=E&ckAPIToken=SELECTOR
// (SELECTOR: the API token's first 16 hex digits, never its secret).

import {h, message, replace} from "./dom.js";
import {container as canopy, describe} from "./canopy.js";

function settingsFor(params) {
  return canopy.webServicesSignIn({containerIdentifier: params.get("container") ?? "", environment: params.get("environment") ?? "",
    apiToken: params.get("ckAPIToken") ?? ""});
}

/** Renders the sign-in for an app into `view`. */
export async function renderWebServicesSignIn(view, {params}, {me, isCurrent}) {
  document.title = "Sign in to an app · Canopy";
  let settings;
  try {
    settings = await settingsFor(params);
  } catch (error) {
    if (isCurrent()) replace(view, h("h1", {}, "Sign in to an app"), message("error", `This sign-in link does not work: ${error.message}`));
    return;
  }
  if (!isCurrent()) return;
  const who = me.name ?? me.email ?? me.userRecordName;
  const feedback = h("div", {class: "feedback", id: "web-services-feedback"});
  const destination = settings.callback ? new URL(settings.callback).origin : null;
  const button = h("button", {type: "button", class: "primary", id: "web-services-continue"}, `Continue as ${who}`);

  function deliver(token) {
    if (settings.callback) {
      const url = new URL(settings.callback);
      url.searchParams.set("ckWebAuthToken", token);
      location.assign(url.toString());
      return;
    }
    if (!window.opener || settings.origins.length === 0) {
      replace(feedback, message("error", "No app can receive this sign-in: open it from the app (its page's origin must be one the server allows)."));
      return;
    }
    // Only an allowed origin receives it: postMessage drops it for any other opener.
    for (const origin of settings.origins) window.opener.postMessage({ckSession: token, ckWebAuthToken: token}, origin);
    replace(feedback, message("notice", "Signed in. You can close this window."));
    window.close();
  }

  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      // In the shape CloudKit clients check a ckWebAuthToken against.
      const issueToken = await canopy.issueToken({form: "WEB_AUTH"});
      deliver(issueToken.token);
    } catch (error) {
      replace(feedback, message("error", describe(error)));
      button.disabled = false;
    }
  });
  replace(view,
    h("h1", {}, "Sign in to an app"),
    h("p", {}, `An app of ${settings.container} (${settings.environment}) asks to act as you, ${who}: `,
      "your private database, the zones shared with you, and the public database as you."),
    h("p", {class: "hint", id: "web-services-destination"},
      destination ? `Your sign-in goes back to ${destination}.` : "Your sign-in goes back to the window that opened this one."),
    button, feedback);
  button.focus();
}
