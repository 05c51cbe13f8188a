// The page: sign in with a Canopy token, lists (zones) of items (records),
// shared by email and accepted by URL, live and offline through one
// SyncEngine per database (store.js), and Web Push through sw.js.
// Everything is drawn with the DOM (textContent), never innerHTML.

import {defaultGateway} from "./config.js";
import {ListStore} from "./store.js";

const $ = (selector) => document.querySelector(selector);
let session = null;   // {canopy, container, me, stores: {PRIVATE, SHARED}}
let current = null;   // the list shown: {scope, key}

// MARK: Signing in

async function start(gateway, token) {
  let canopy;
  try {
    canopy = await import(`${gateway}/js/index.js`);
  } catch (error) {
    throw new Error(`CanopyJS could not be loaded from ${gateway}/js/index.js (is canopy serve running there with --cors-origin ${location.origin}?): ${error.message}`);
  }
  const container = new canopy.Container({baseURL: gateway, token});
  const me = await container.currentUser();
  // The engines' own failures are background ones: a server away is shown
  // by the status line, not as an error (reportBackground).
  const options = {onChange: render, onError: reportBackground};
  const key = (scope) => `todo:${gateway}:${me.userRecordName}:${scope}`;
  session = {canopy, container, me, stores: {
    PRIVATE: new ListStore(canopy, container.privateDatabase, key("private"), options),
    SHARED: new ListStore(canopy, container.sharedDatabase, key("shared"), options),
  }};
  $("#who").textContent = me.name ?? me.email ?? me.userRecordName;
  show(true);
  render();
}

function show(signedIn) {
  $("#sign-in").hidden = signedIn;
  $("#app").hidden = !signedIn;
  $("#sign-out").hidden = !signedIn;
  $("#notify").hidden = !signedIn || !("serviceWorker" in navigator);
}

$("#sign-in").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const gateway = form.gateway.value.trim().replace(/\/+$/, "");
  const token = form.token.value.trim();
  try {
    await start(gateway, token);
    localStorage.setItem("todo:gateway", gateway);
    localStorage.setItem("todo:token", token);
    form.token.value = "";
    report(null);
  } catch (error) {
    session = null;
    report(error);
  }
});

$("#sign-out").addEventListener("click", async () => {
  localStorage.removeItem("todo:token");
  const stores = Object.values(session?.stores ?? {});
  session?.container.close();
  session = null;
  current = null;
  await Promise.all(stores.map((store) => store.engine.stop()));
  show(false);
  render();
});

// MARK: Drawing

function element(tag, text, attributes = {}) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

/** A zone's name made from a list's title (zone names are A-Z a-z 0-9 _ . -), and back. */
const zoneNameFor = (title) => title.trim().replace(/[^A-Za-z0-9_.-]+/g, "-").replace(/^[-_]+/, "").slice(0, 200) || "List";
const titleOf = (zoneID) => zoneID.zoneName.replaceAll("-", " ");

function currentList() {
  return current && session?.stores[current.scope].lists.get(current.key);
}

/**
 * What the status line says, from the engines' real state: "offline" (the
 * browser has no network), "waiting" (the network is there but the server
 * does not answer: the engines say so with serverReachabilityChanged and
 * send by themselves once it does), or "online".
 */
function connection() {
  if (!navigator.onLine) return "offline";
  return Object.values(session?.stores ?? {}).some((store) => store.reachable === false) ? "waiting" : "online";
}

function render() {
  const pending = session ? session.stores.PRIVATE.pending + session.stores.SHARED.pending : 0;
  const status = $("#status");
  const state = connection();
  status.dataset.online = String(navigator.onLine);
  status.dataset.connection = state;
  status.dataset.pending = String(pending);
  const said = {offline: "Offline", waiting: "Waiting for the server", online: "Online"}[state];
  status.textContent = !session ? "" : `${said}${pending ? ` · ${pending} change${pending === 1 ? "" : "s"} waiting to be sent` : " · up to date"}`;
  // A "cannot be reached" message is over once the server answers again.
  if (state === "online" && $("#message").dataset.kind === "unreachable") report(null);
  if (!session) return;
  for (const [scope, id] of [["PRIVATE", "#own-lists"], ["SHARED", "#shared-lists"]]) {
    const lists = [...session.stores[scope].lists.values()].filter((list) => !list.zoneID.zoneName.startsWith("_")).sort((a, b) => a.zoneID.zoneName.localeCompare(b.zoneID.zoneName));
    // Drawn again only when it changed (a button replaced under the pointer would lose its click).
    const drawn = JSON.stringify([lists.map((list) => list.zoneID.key), current]);
    if ($(id).dataset.drawn === drawn) continue;
    $(id).dataset.drawn = drawn;
    $(id).replaceChildren(...lists.map((list) => {
      const button = element("button", titleOf(list.zoneID), {type: "button", "data-zone": list.zoneID.key});
      button.setAttribute("aria-current", String(current?.scope === scope && current.key === list.zoneID.key));
      button.addEventListener("click", () => { current = {scope, key: list.zoneID.key}; render(); });
      const item = element("li");
      item.append(button);
      return item;
    }));
  }
  const list = currentList();
  $("#list").hidden = !list;
  if (!list) return;
  $("#list-title").textContent = titleOf(list.zoneID);
  $("#share").hidden = current.scope !== "PRIVATE";
  renderItems(list);
}

/** Updates the rows in place (a row being typed in keeps its text and focus). */
function renderItems(list) {
  const ul = $("#items");
  const rows = new Map([...ul.children].map((row) => [row.dataset.record, row]));
  const items = [...list.items.values()].sort((a, b) => (a.fields.position ?? 0) - (b.fields.position ?? 0) || a.recordName.localeCompare(b.recordName));
  items.forEach((record, index) => {
    let row = rows.get(record.recordName);
    rows.delete(record.recordName);
    if (!row) {
      row = $("#item-row").content.firstElementChild.cloneNode(true);
      row.dataset.record = record.recordName;
    }
    const done = record.fields.done === true;
    row.classList.toggle("done", done);
    row.querySelector("input[type=checkbox]").checked = done;
    const title = row.querySelector(".title");
    if (document.activeElement !== title) title.value = record.fields.title ?? "";
    if (ul.children[index] !== row) ul.insertBefore(row, ul.children[index] ?? null);
  });
  for (const row of rows.values()) row.remove();
}

/** The codes that mean the server cannot be reached now, not that it refused. */
function unreachable(error) {
  const codes = session?.canopy.ErrorCode;
  return Boolean(codes) && (error?.code === codes.NETWORK_FAILURE || error?.code === codes.SERVICE_UNAVAILABLE);
}

/** Shows a failure of something the person did (or hides the message, given null). */
function report(error) {
  const message = $("#message");
  // Offline, failed requests are expected: the changes wait in the queue.
  const quiet = !error || (!navigator.onLine && unreachable(error));
  message.hidden = quiet;
  message.textContent = quiet ? "" : error.message ?? String(error);
  message.dataset.kind = quiet ? "" : unreachable(error) ? "unreachable" : "refused";
  if (!quiet) console.warn(error);
}

/**
 * A failure of the engines' own work (a send or fetch after its retries):
 * when the server cannot be reached the status line says so and the
 * engine tries again by itself, so only a refusal is shown.
 */
function reportBackground(error) {
  if (unreachable(error)) { render(); return; }
  report(error);
}

// MARK: Lists and items

$("#new-list").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  try {
    const zoneID = await session.container.privateDatabase.saveZone(zoneNameFor(form.title.value));
    current = {scope: "PRIVATE", key: session.stores.PRIVATE.addList(zoneID).zoneID.key};
    form.reset();
    render();
  } catch (error) { report(error); }
});

$("#new-item").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.target, list = currentList();
  // Items keep the order they were added in, by the clock: two people adding at once get different positions.
  const last = Math.max(0, ...[...list.items.values()].map((record) => Number(record.fields.position ?? 0)));
  const position = Math.max(Date.now(), last + 1);
  session.stores[current.scope].edit(list.zoneID, crypto.randomUUID(), {title: form.title.value.trim(), done: false, position});
  form.reset();
});

$("#items").addEventListener("change", (event) => {
  const row = event.target.closest("li"), list = currentList();
  const fields = event.target.type === "checkbox" ? {done: event.target.checked} : {title: event.target.value.trim()};
  session.stores[current.scope].edit(list.zoneID, row.dataset.record, fields);
});

$("#items").addEventListener("click", (event) => {
  if (!event.target.matches(".delete")) return;
  session.stores[current.scope].remove(currentList().zoneID, event.target.closest("li").dataset.record);
});

// MARK: Sharing

$("#share").addEventListener("click", async () => {
  const list = currentList();
  $("#share-list-title").textContent = titleOf(list.zoneID);
  $("#share-url").value = list.shareURL ?? "";
  $("#share-people").textContent = "";
  $("#share-sheet").showModal();
  try {
    showShare(await session.container.privateDatabase.share(list.zoneID));
  } catch (error) { report(error); }
});

function showShare(share) {
  $("#share-url").value = share?.url ?? "";
  const people = share?.participants.filter((person) => person.role !== "OWNER") ?? [];
  $("#share-people").textContent = people.length ? `Shared with ${people.map((person) => person.user?.name ?? person.email ?? person.user?.email).join(", ")}` : "Not shared yet.";
}

$("#share-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target, list = currentList(), database = session.container.privateDatabase;
  const participant = {email: form.email.value.trim(), permission: "READ_WRITE"};
  try {
    // The first person makes the share; later ones join it.
    const share = await database.share(list.zoneID)
      ? await database.setParticipant(list.zoneID, participant)
      : await database.saveShare(list.zoneID, {title: titleOf(list.zoneID), participants: [participant]});
    list.shareURL = share.url;
    showShare(share);
    form.reset();
  } catch (error) { report(error); }
});

$("#close-share").addEventListener("click", () => $("#share-sheet").close());

$("#accept-share").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target, store = session.stores.SHARED;
  try {
    const metadata = await session.container.acceptShare(form.url.value.trim());
    current = {scope: "SHARED", key: store.addList(metadata.zoneID).zoneID.key};
    form.reset();
    render();
    await store.engine.fetchChanges();
  } catch (error) { report(error); }
});

// MARK: Offline, push

// The engines send and fetch by themselves when the network is back (and
// when the page is shown again, and when the live connection returns).
addEventListener("online", render);
addEventListener("offline", render);

if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("sw.js").catch(report);
  // sw.js says a push arrived: fetch what changed.
  navigator.serviceWorker.addEventListener("message", (event) => {
    if (event.data?.type === "changes") for (const store of Object.values(session?.stores ?? {})) store.sync();
  });
}

$("#notify").addEventListener("click", async () => {
  try {
    const registration = await navigator.serviceWorker.ready;
    await session.canopy.subscribeToWebPush(registration, session.container);
    // Pushes come for the server's subscriptions: one per database, told of every change.
    for (const scope of ["PRIVATE", "SHARED"]) {
      await session.container.database(scope).saveSubscription({subscriptionID: `todo-${scope.toLowerCase()}`, kind: "DATABASE"});
    }
    $("#notify").textContent = "Notifications on";
  } catch (error) { report(error); }
});

// MARK: Opening the page

const form = $("#sign-in");
form.gateway.value = localStorage.getItem("todo:gateway") ?? defaultGateway;
const saved = localStorage.getItem("todo:token");
if (saved) start(form.gateway.value, saved).catch((error) => { show(false); report(error); });
else show(false);
