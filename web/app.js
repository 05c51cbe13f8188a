// The console: a hash router over views. Routes (no token in any of them):
//   #/                                   zones (private and shared)
//   #/zone/SCOPE/OWNER/ZONE?type=&filter=&sort=   a zone's records
//   #/record/SCOPE/OWNER/ZONE/RECORD     a record's fields
//   #/new/SCOPE/OWNER/ZONE?type=         a new record
//   #/web-services/sign-in?container=&environment=&ckAPIToken=   a CloudKit web app's sign-in
// SCOPE is PRIVATE, SHARED or PUBLIC; the public database's zone and
// records are shown signed out too, as nobody sees them.

import {h, message, replace} from "./dom.js";
import {container as canopy, describe, endSession} from "./canopy.js";
import {currentToken, takeNext} from "./session.js";
import {renderSignIn} from "./signin.js";
import {renderZones} from "./view-zones.js";
import {renderZone} from "./view-zone.js";
import {renderRecord} from "./view-record.js";
import {parseRoute} from "./routes.js";
import {finishSignIn} from "./oidc.js";
import {publicRoute} from "./public.js";
import {renderWebServicesSignIn} from "./view-web-services.js";

const view = document.getElementById("view");
const account = document.getElementById("account");
let me = null;
let leaving = null;   // ends the current view's live subscriptions
let generation = 0;   // which route() is current: a view that finishes late draws nothing
let signInProblem = null;   // why a provider's sign-in failed, for the sign-in form

function showAccount() {
  if (!me && !currentToken() && parseRoute(location.hash).parts[1] === "PUBLIC") {
    replace(account, h("a", {href: "#/", id: "sign-in-link"}, "Sign in"));
    return;
  }
  if (!me) { replace(account); return; }
  replace(account,
    h("span", {class: "who"}, "Signed in as ", h("strong", {id: "signed-in-name"}, me.name ?? me.email ?? me.userRecordName)),
    h("button", {type: "button", class: "link", onclick: async () => { await endSession(); me = null; route(); }}, "Sign out"));
}

async function route() {
  leaving?.();
  leaving = null;
  const mine = ++generation;
  const isCurrent = () => mine === generation;
  if (!currentToken()) {
    me = null;
    const signedOut = parseRoute(location.hash);
    if (signedOut.parts[1] === "PUBLIC" && ["zone", "record"].includes(signedOut.parts[0])) {
      showAccount();
      const context = {me: null, isCurrent, setLeaving: (stop) => { if (isCurrent()) leaving = stop; else stop(); }};
      const [kind, scope, owner, zone, record] = signedOut.parts;
      if (kind === "record" && record) await renderRecord(view, {scope, ownerName: owner, zoneName: zone, recordName: record}, context);
      else await renderZone(view, {scope, ownerName: owner, zoneName: zone, params: signedOut.params}, context);
      return;
    }
    showAccount();
    document.title = "Sign in · Canopy";
    const problem = signInProblem;
    signInProblem = null;
    renderSignIn(view, (who) => {
      me = who;
      const next = takeNext();
      if (next && next !== location.pathname + location.hash) { location.assign(next); return; }
      route();
    }, {problem});
    view.append(h("p", {class: "hint", id: "public-hint"}, "Or ", h("a", {href: publicRoute, id: "browse-public"}, "browse the public database"), " without signing in."));
    return;
  }
  if (!me) {
    try {
      me = await canopy.currentUser();
    } catch (error) {
      me = null;
      if (!currentToken()) return isCurrent() ? route() : undefined;
      if (!isCurrent()) return;
      replace(view, h("h1", {}, "Canopy"), message("error", describe(error)),
        h("button", {type: "button", class: "primary", onclick: route}, "Try again"));
      return;
    }
    if (!isCurrent()) return;
  }
  showAccount();
  const {parts, params} = parseRoute(location.hash);
  // A view checks isCurrent() after each wait before it draws; a late
  // view's subscriptions are stopped at once instead of kept.
  const context = {me, isCurrent, setLeaving: (stop) => { if (isCurrent()) leaving = stop; else stop(); }};
  const [kind, scope, owner, zone, record] = parts;
  if (kind === "zone" && zone) {
    await renderZone(view, {scope, ownerName: owner, zoneName: zone, params}, context);
  } else if (kind === "record" && record) {
    await renderRecord(view, {scope, ownerName: owner, zoneName: zone, recordName: record}, context);
  } else if (kind === "web-services" && scope === "sign-in") {
    await renderWebServicesSignIn(view, {params}, context);
  } else if (kind === "new" && zone) {
    await renderRecord(view, {scope, ownerName: owner, zoneName: zone, recordName: null, recordType: params.get("type")}, context);
  } else {
    await renderZones(view, context);
  }
  if (isCurrent()) view.focus({preventScroll: true});
}

// Back from a provider's sign-in page: finish, then go where the person was.
async function arrive() {
  const returned = await finishSignIn();
  if (returned?.error) signInProblem = returned.error;
  const next = returned?.signedIn ? takeNext() : null;
  if (next && next !== "/") location.assign(next); else route();
}

window.addEventListener("hashchange", () => {
  if (/(^#|&)(id_token|error)=/.test(location.hash)) arrive();
  else if (location.hash === "" || location.hash.startsWith("#/")) route();
  // Any other fragment (the skip link's #view) is a place on this page, not a route.
});
window.addEventListener("canopy:signed-out", async () => { await endSession(); me = null; route(); });
arrive();
