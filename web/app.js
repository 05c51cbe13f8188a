// The console: a hash router over views. Routes (no token in any of them):
//   #/                                   zones (private and shared)
//   #/zone/SCOPE/OWNER/ZONE?type=&filter=&sort=   a zone's records
//   #/record/SCOPE/OWNER/ZONE/RECORD     a record's fields
//   #/new/SCOPE/OWNER/ZONE?type=         a new record

import {h, replace} from "./dom.js";
import {gql, live} from "./api.js";
import {currentToken, signOut, takeNext} from "./session.js";
import {renderSignIn} from "./signin.js";
import {renderZones} from "./view-zones.js";
import {renderZone} from "./view-zone.js";
import {renderRecord} from "./view-record.js";
import {parseRoute} from "./routes.js";
import {finishSignIn} from "./oidc.js";

const view = document.getElementById("view");
const account = document.getElementById("account");
let me = null;
let leaving = null;   // ends the current view's live subscriptions
let signInProblem = null;   // why a provider's sign-in failed, for the sign-in form

function showAccount() {
  if (!me) { replace(account); return; }
  replace(account,
    h("span", {class: "who"}, "Signed in as ", h("strong", {id: "signed-in-name"}, me.name ?? me.email ?? me.userRecordName)),
    h("button", {type: "button", class: "link", onclick: () => { live.close(); signOut(); me = null; route(); }}, "Sign out"));
}

async function route() {
  leaving?.();
  leaving = null;
  if (!currentToken()) {
    me = null;
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
    return;
  }
  if (!me) {
    try {
      me = (await gql("{ me { userRecordName name email phone } }")).me;
    } catch {
      me = null;
      if (!currentToken()) return route();
    }
  }
  showAccount();
  const {parts, params} = parseRoute(location.hash);
  const context = {me, setLeaving: (stop) => { leaving = stop; }};
  const [kind, scope, owner, zone, record] = parts;
  if (kind === "zone" && zone) {
    await renderZone(view, {scope, ownerName: owner, zoneName: zone, params}, context);
  } else if (kind === "record" && record) {
    await renderRecord(view, {scope, ownerName: owner, zoneName: zone, recordName: record}, context);
  } else if (kind === "new" && zone) {
    await renderRecord(view, {scope, ownerName: owner, zoneName: zone, recordName: null, recordType: params.get("type")}, context);
  } else {
    await renderZones(view, context);
  }
  view.focus({preventScroll: true});
}

// Back from a provider's sign-in page: finish, then go where the person was.
async function arrive() {
  const returned = await finishSignIn();
  if (returned?.error) signInProblem = returned.error;
  const next = returned?.signedIn ? takeNext() : null;
  if (next && next !== "/") location.assign(next); else route();
}

window.addEventListener("hashchange", () => {
  if (/(^#|&)(id_token|error)=/.test(location.hash)) arrive(); else route();
});
window.addEventListener("canopy:signed-out", () => { live.close(); me = null; route(); });
arrive();
