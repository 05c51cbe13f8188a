// The test page's script: CanopyJS from the gateway (?gateway=…, kept for
// the way back from the provider), every auth event listed in #events as
// JSON, each button one call. `window.canopy` holds what the test's
// scripts use (a SyncedDatabase on IndexedDB, the requests sent so far).

const given = new URLSearchParams(location.search).get("gateway");
if (given) localStorage.setItem("test:gateway", given);
const gateway = localStorage.getItem("test:gateway");
const {Container, IndexedDBStorage, SyncedDatabase} = await import(`${gateway}/js/index.js`);
let requests = 0;
const container = new Container({baseURL: gateway, fetch: (...args) => { requests += 1; return fetch(...args); }});
window.canopy = {container, Container, IndexedDBStorage, SyncedDatabase, gateway, requests: () => requests};
const events = [];
const $ = (id) => document.getElementById(id);
const show = () => {
  $("events").textContent = JSON.stringify(events);
  $("who").textContent = container.session ? `signed in as ${container.session.user?.name}` : "signed out";
};
const problem = (error) => { $("problem").textContent = `${error.code ?? ""} ${error.message}`; };

container.onAuthChange((event, session, detail) => {
  events.push({event, name: session?.user?.name ?? null, reason: detail.reason ?? null});
  show();
});
$("redirect").onclick = () => container.signIn({provider: "idp"}).catch(problem);
$("popup").onclick = () => container.signIn({provider: "idp", mode: "popup"}).catch(problem);
$("whoami").onclick = async () => {
  $("who").textContent = "asking the server";
  try { $("who").textContent = `the server says ${(await container.currentUser()).name}`; } catch (error) { problem(error); }
};
$("sign-out").onclick = () => container.signOut().catch(problem);
try {
  await container.completeSignIn();
} catch (error) {
  problem(error);
}
show();
document.body.dataset.ready = "true";
