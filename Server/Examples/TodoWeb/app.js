// The page: signing in with the server's provider (CanopyJS's signIn),
// lists (zones) of items (records of type Item, typed from schema.ckdb),
// each database kept on the device by a SyncedDatabase in IndexedDB (live,
// offline, merged), sharing with a permission and a link to copy, and Web
// Push through sw.js. Everything is drawn with the DOM (textContent), never
// innerHTML. Type-checked with tsc --strict (tsconfig.json).

import {defaultGateway} from "./config.js";

/** @typedef {typeof import("@canopy/client")} Canopy */
/** @typedef {import("@canopy/client").Container} Container */
/** @typedef {import("@canopy/client").SyncedDatabase} SyncedDatabase */
/** @typedef {import("@canopy/client").ZoneID} ZoneID */
/** @typedef {import("@canopy/client").Share} Share */
/** @typedef {import("@canopy/client").Participant} Participant */
/** @typedef {import("./canopy-records").Item} Item */
/** @typedef {"PRIVATE" | "SHARED"} Scope */
/** @typedef {{canopy: Canopy, container: Container, me: {userRecordName: string, name: string | null, email: string | null}, copies: Record<Scope, SyncedDatabase>}} Session */

/**
 * The element `selector` names; the page has every one of them.
 * @template {HTMLElement} T
 * @param {string} selector
 * @returns {T}
 */
function $(selector) {
  const found = document.querySelector(selector);
  if (!found) throw new Error(`the page has no ${selector}`);
  return /** @type {T} */ (found);
}

/** @type {Session | null} */
let session = null;
/** @type {{scope: Scope, key: string} | null} */
let current = null;
/**
 * What the server says of each list's share (owner, people, link), by scope and zone key.
 * @type {Map<string, Share | null>}
 */
const shares = new Map();

const gatewayKey = "todo:gateway";
let gateway = localStorage.getItem(gatewayKey) ?? defaultGateway;

// MARK: Signing in

/** CanopyJS, from the gateway itself (it serves the package at /js/). */
async function loadCanopy() {
  try {
    return /** @type {Canopy} */ (await import(`${gateway}/js/index.js`));
  } catch (error) {
    throw new Error(`CanopyJS could not be loaded from ${gateway}/js/index.js (is canopy serve running there with --cors-origin ${location.origin}?): ${message(error)}`);
  }
}

/** @param {unknown} error */
function message(error) {
  return error instanceof Error ? error.message : String(error);
}

/** Opens the page: finishes a sign-in the provider sent back, or restores the stored one, or asks. */
async function open() {
  report(null);
  $("#gateway-shown").textContent = gateway;
  /** @type {HTMLInputElement} */ ($("#gateway-form input[name=gateway]")).value = gateway;
  let canopy;
  try {
    canopy = await loadCanopy();
  } catch (error) {
    void showSignIn();
    // The server is not where the page looked: open the setting that says where.
    /** @type {HTMLDetailsElement} */ ($("#server-setting")).open = true;
    report(error);
    return;
  }
  const container = new canopy.Container({baseURL: gateway});
  try {
    await container.completeSignIn();
  } catch (error) {
    report(error);
  }
  container.onAuthChange((event, signedIn, detail) => {
    if (event === "SIGNED_OUT" && session) {
      void leave();
      if (detail.reason) report(new Error(`You were signed out: ${detail.reason}.`));
    }
  });
  if (container.session) await start(canopy, container);
  else await showSignIn(container);
}

/** How many times the sign-in card was drawn: only the latest drawing shows its buttons. */
let signInDrawings = 0;

/**
 * The sign-in card: a button per provider the server offers.
 * @param {Container} [container]
 */
async function showSignIn(container) {
  const drawing = ++signInDrawings;
  show(false);
  const providers = $("#providers");
  providers.replaceChildren();
  if (!container) return;
  try {
    const offered = await container.signInProviders();
    // The server was changed while this one answered: its buttons would sign in there.
    if (drawing !== signInDrawings) return;
    providers.replaceChildren(...offered.map((provider) => {
      const button = /** @type {HTMLButtonElement} */ (element("button", provider.label, {type: "button", class: "primary wide", "data-provider": provider.name}));
      button.addEventListener("click", () => {
        button.disabled = true;
        container.signIn({provider: provider.name}).catch((error) => { button.disabled = false; report(error); });
      });
      return button;
    }));
    $("#no-providers").hidden = offered.length > 0;
    /** @type {HTMLDetailsElement} */ ($("#token-sign-in")).open = offered.length === 0;
    /** @type {HTMLButtonElement | null} */ (providers.querySelector("button"))?.focus();
  } catch (error) {
    if (drawing === signInDrawings) report(error);
  }
}

/**
 * Signed in: one SyncedDatabase per database, kept in IndexedDB under the
 * person's name, so two people on one browser never see each other's copy.
 * @param {Canopy} canopy
 * @param {Container} container
 */
async function start(canopy, container) {
  // From the kept session, without a request: the page opens its copies with the server away.
  const me = container.session?.user ?? await container.currentUser();
  /** @param {Scope} scope */
  const copy = (scope) => canopy.SyncedDatabase.open({
    database: container.database(scope),
    storage: new canopy.IndexedDBStorage(`todo:${gateway}:${me.userRecordName}:${scope.toLowerCase()}`),
    onChange: render,
    onError: reportBackground,
  });
  const [own, shared] = await Promise.all([copy("PRIVATE"), copy("SHARED")]);
  session = {canopy, container, me, copies: {PRIVATE: own, SHARED: shared}};
  $("#who").textContent = me.name ?? me.email ?? me.userRecordName;
  show(true);
  report(null);
  render();
  void loadShares();
}

/** @param {boolean} signedIn */
function show(signedIn) {
  $("#sign-in").hidden = signedIn;
  $("#app").hidden = !signedIn;
  $("#account").hidden = !signedIn;
  $("#status").hidden = !signedIn;
  $("#notify").hidden = !signedIn || !("serviceWorker" in navigator);
}

/** Stops syncing and shows the sign-in card (the copies stay on the device for next time). */
async function leave() {
  const signedOut = session;
  session = null;
  current = null;
  shares.clear();
  if (signedOut) await Promise.all(Object.values(signedOut.copies).map((copy) => copy.close()));
  signedOut?.container.close();
  const canopy = await loadCanopy();
  await showSignIn(new canopy.Container({baseURL: gateway}));
}

$("#sign-out").addEventListener("click", async () => {
  const container = session?.container;
  await leave();
  await container?.signOut();
});

$("#gateway-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const field = /** @type {HTMLInputElement} */ ($("#gateway-form input[name=gateway]"));
  gateway = field.value.trim().replace(/\/+$/, "");
  localStorage.setItem(gatewayKey, gateway);
  void open();
});

// A token (canopy users add prints one): for trying the app on a server
// with no provider. It is not kept: a reload asks again.
$("#token-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = /** @type {HTMLInputElement} */ ($("#token-form input[name=token]"));
  try {
    const canopy = await loadCanopy();
    await start(canopy, new canopy.Container({baseURL: gateway, token: field.value.trim()}));
    field.value = "";
  } catch (error) {
    report(error);
  }
});

// MARK: Drawing

/**
 * @param {string} tag
 * @param {string} [text]
 * @param {Record<string, string>} [attributes]
 */
function element(tag, text, attributes = {}) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

/** A zone's name made from a list's title (zone names are A-Z a-z 0-9 _ . -), and back. */
/** @param {string} title */
const zoneNameFor = (title) => title.trim().replace(/[^A-Za-z0-9_.-]+/g, "-").replace(/^[-_]+/, "").slice(0, 200) || "List";
/** @param {ZoneID} zoneID */
const titleOf = (zoneID) => zoneID.zoneName.replaceAll("-", " ");
/** @param {Scope} scope @param {string} key */
const shareKey = (scope, key) => `${scope} ${key}`;

/** The list shown, with its copy. */
function currentList() {
  if (!session || !current) return null;
  const copy = session.copies[current.scope];
  const zone = copy.zones().find((candidate) => candidate.zoneID.key === current?.key);
  return zone ? {copy, zoneID: zone.zoneID, shareURL: zone.shareURL, scope: current.scope} : null;
}

/**
 * A zone's items, typed from the schema, in the order they were added.
 * @param {SyncedDatabase} copy
 * @param {ZoneID} zoneID
 * @returns {Item[]}
 */
function itemsOf(copy, zoneID) {
  const canopy = /** @type {Session} */ (session).canopy;
  /** @type {Item[]} */
  const items = [];
  for (const record of copy.records(zoneID)) if (canopy.isRecordType(record, "Item")) items.push(record);
  return items.sort((a, b) => Number(a.fields.position ?? 0) - Number(b.fields.position ?? 0) || a.recordName.localeCompare(b.recordName));
}

/**
 * What the status line says, from the copies' real state: "offline" (the
 * browser has no network), "waiting" (the network is there but the server
 * does not answer; what waits is sent by itself once it does), or "online".
 */
function connection() {
  if (!navigator.onLine) return "offline";
  return Object.values(session?.copies ?? {}).some((copy) => copy.serverReachable === false) ? "waiting" : "online";
}

function render() {
  const pending = session ? session.copies.PRIVATE.pendingCount + session.copies.SHARED.pendingCount : 0;
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
  const live = session;
  for (const [scope, id, empty] of /** @type {[Scope, string, string][]} */ ([["PRIVATE", "#own-lists", "#own-empty"], ["SHARED", "#shared-lists", "#shared-empty"]])) {
    const lists = live.copies[scope].zones().filter((zone) => !zone.zoneID.zoneName.startsWith("_"))
      .sort((a, b) => a.zoneID.zoneName.localeCompare(b.zoneID.zoneName));
    $(empty).hidden = lists.length > 0;
    // Drawn again only when it changed (a button replaced under the pointer would lose its click).
    const owners = lists.map((zone) => ownerName(scope, zone.zoneID));
    const drawn = JSON.stringify([lists.map((zone) => zone.zoneID.key), owners, current]);
    if ($(id).dataset.drawn === drawn) continue;
    $(id).dataset.drawn = drawn;
    $(id).replaceChildren(...lists.map((zone, index) => {
      const button = element("button", "", {type: "button", "data-zone": zone.zoneID.key});
      button.append(element("span", titleOf(zone.zoneID), {class: "name"}));
      if (scope === "SHARED") button.append(element("span", owners[index] ? `${owners[index]}’s` : "shared", {class: "owner"}));
      button.setAttribute("aria-current", String(current?.scope === scope && current.key === zone.zoneID.key));
      button.addEventListener("click", () => {
        current = {scope, key: zone.zoneID.key};
        render();
        /** @type {HTMLInputElement} */ ($("#new-item input[name=title]")).focus();
      });
      const item = element("li");
      item.append(button);
      return item;
    }));
  }
  const list = currentList();
  $("#list").hidden = !list;
  $("#no-list").hidden = Boolean(list);
  if (!list) return;
  const share = shares.get(shareKey(list.scope, list.zoneID.key));
  const mine = list.scope === "PRIVATE";
  const myPermission = share?.participants.find((person) => person.user?.userRecordName === live.me.userRecordName)?.permission;
  const readOnly = !mine && myPermission === "READ_ONLY";
  $("#list-title").textContent = titleOf(list.zoneID);
  $("#list-people").textContent = describePeople(list.scope, list.zoneID, share, myPermission);
  $("#share").hidden = !mine;
  $("#new-item").hidden = readOnly;
  renderItems(itemsOf(list.copy, list.zoneID), readOnly);
}

/**
 * Whose a list is and who else has it, in words.
 * @param {Scope} scope
 * @param {ZoneID} zoneID
 * @param {Share | null | undefined} share
 * @param {string | undefined} myPermission
 */
function describePeople(scope, zoneID, share, myPermission) {
  const others = /** @type {Participant[]} */ (share?.participants ?? []).filter((person) => person.role !== "OWNER" && person.user?.userRecordName !== session?.me.userRecordName);
  const names = others.map((person) => person.user?.name ?? person.email ?? person.user?.email ?? "someone");
  if (scope === "PRIVATE") return names.length ? `Shared with ${names.join(", ")}` : "Only you";
  const owner = ownerName(scope, zoneID) ?? "Someone";
  const can = myPermission === "READ_ONLY" ? "you can view it" : "you can edit it";
  return `${owner}’s list · ${can}${names.length ? ` · also shared with ${names.join(", ")}` : ""}`;
}

/**
 * The name of a shared list's owner, once its share is known.
 * @param {Scope} scope
 * @param {ZoneID} zoneID
 */
function ownerName(scope, zoneID) {
  if (scope !== "SHARED") return null;
  const owner = shares.get(shareKey(scope, zoneID.key))?.participants.find((person) => person.role === "OWNER");
  return owner?.user?.name ?? owner?.user?.email ?? null;
}

/** Reads each list's share (owner, people); offline it keeps what it had. */
async function loadShares() {
  const live = session;
  if (!live) return;
  for (const scope of /** @type {Scope[]} */ (["PRIVATE", "SHARED"])) {
    for (const zone of live.copies[scope].zones()) {
      if (zone.zoneID.zoneName.startsWith("_")) continue;
      try {
        shares.set(shareKey(scope, zone.zoneID.key), await live.container.database(scope).share(zone.zoneID));
      } catch { /* offline, or no longer shared: drawn without it */ }
    }
  }
  render();
}

/**
 * Updates the rows in place (a row being typed in keeps its text and focus).
 * @param {Item[]} items
 * @param {boolean} readOnly
 */
function renderItems(items, readOnly) {
  const ul = $("#items");
  const rows = new Map([...ul.children].map((row) => [/** @type {HTMLElement} */ (row).dataset.record, /** @type {HTMLElement} */ (row)]));
  $("#items-empty").hidden = items.length > 0;
  items.forEach((record, index) => {
    let row = rows.get(record.recordName);
    rows.delete(record.recordName);
    if (!row) {
      const template = /** @type {HTMLTemplateElement} */ ($("#item-row"));
      row = /** @type {HTMLElement} */ (/** @type {Element} */ (template.content.firstElementChild).cloneNode(true));
      row.dataset.record = record.recordName;
    }
    const done = record.fields.done === true;
    row.classList.toggle("done", done);
    const box = /** @type {HTMLInputElement} */ (row.querySelector("input[type=checkbox]"));
    box.checked = done;
    const title = /** @type {HTMLInputElement} */ (row.querySelector(".title"));
    if (document.activeElement !== title) title.value = record.fields.title ?? "";
    for (const control of [box, title, /** @type {HTMLButtonElement} */ (row.querySelector(".delete"))]) control.disabled = readOnly;
    if (ul.children[index] !== row) ul.insertBefore(row, ul.children[index] ?? null);
  });
  for (const row of rows.values()) row.remove();
}

/**
 * The codes that mean the server cannot be reached now, not that it refused.
 * @param {unknown} error
 */
function unreachable(error) {
  const code = /** @type {{code?: string} | null} */ (error)?.code;
  return code === "NETWORK_FAILURE" || code === "SERVICE_UNAVAILABLE";
}

/**
 * Shows a failure of something the person did (or hides the message, given null).
 * @param {unknown} error
 */
function report(error) {
  const box = $("#message");
  // Offline, failed requests are expected: the changes wait in the queue.
  const quiet = !error || (!navigator.onLine && unreachable(error));
  box.hidden = quiet;
  box.textContent = quiet ? "" : message(error);
  box.dataset.kind = quiet ? "" : unreachable(error) ? "unreachable" : "refused";
  if (!quiet) console.warn(error);
}

/**
 * A failure of the copies' own work (a send or fetch after its retries):
 * when the server cannot be reached the status line says so and the copy
 * tries again by itself, so only a refusal is shown.
 * @param {unknown} error
 */
function reportBackground(error) {
  if (unreachable(error)) { render(); return; }
  report(error);
}

// MARK: Lists and items

$("#new-list").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = /** @type {HTMLFormElement} */ (event.target);
  const field = /** @type {HTMLInputElement} */ (form.elements.namedItem("title"));
  if (!session) return;
  try {
    const zone = await session.container.privateDatabase.saveZone(zoneNameFor(field.value));
    await session.copies.PRIVATE.sync();
    current = {scope: "PRIVATE", key: session.copies.PRIVATE.engine.canonicalZoneID(zone).key};
    form.reset();
    render();
    /** @type {HTMLInputElement} */ ($("#new-item input[name=title]")).focus();
  } catch (error) { report(error); }
});

$("#new-item").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = /** @type {HTMLFormElement} */ (event.target);
  const field = /** @type {HTMLInputElement} */ (form.elements.namedItem("title"));
  const list = currentList();
  if (!list || !field.value.trim()) return;
  // Items keep the order they were added in, by the clock: two people adding at once get different positions.
  const last = Math.max(0, ...itemsOf(list.copy, list.zoneID).map((item) => Number(item.fields.position ?? 0)));
  const position = Math.max(Date.now(), last + 1);
  list.copy.save(list.zoneID, {recordName: crypto.randomUUID(), recordType: "Item", fields: {title: field.value.trim(), done: false, position}}).catch(report);
  form.reset();
});

$("#items").addEventListener("change", (event) => {
  const target = /** @type {HTMLInputElement} */ (event.target);
  const row = /** @type {HTMLElement} */ (target.closest("li"));
  const list = currentList();
  if (!list || !row.dataset.record) return;
  const fields = target.type === "checkbox" ? {done: target.checked} : {title: target.value.trim()};
  list.copy.save(list.zoneID, {recordName: row.dataset.record, fields}).catch(report);
});

$("#items").addEventListener("click", (event) => {
  const target = /** @type {HTMLElement} */ (event.target);
  const list = currentList();
  const name = /** @type {HTMLElement | null} */ (target.closest("li"))?.dataset.record;
  if (!target.matches(".delete") || !list || !name) return;
  list.copy.delete(list.zoneID, name).catch(report);
});

// MARK: Sharing

const sheet = /** @type {HTMLDialogElement} */ ($("#share-sheet"));

$("#share").addEventListener("click", async () => {
  const list = currentList();
  if (!list || !session) return;
  $("#share-list-title").textContent = titleOf(list.zoneID);
  showShare(shares.get(shareKey("PRIVATE", list.zoneID.key)) ?? null);
  $("#copied").textContent = "";
  sheet.showModal();
  try {
    const share = await session.container.privateDatabase.share(list.zoneID);
    shares.set(shareKey("PRIVATE", list.zoneID.key), share);
    showShare(share);
  } catch (error) { report(error); }
});

/** @param {string} permission */
const permissionWords = (permission) => permission === "READ_ONLY" ? "can view" : "can edit";

/**
 * The sheet's people (each with their permission and whether they opened the link) and link.
 * @param {Share | null} share
 */
function showShare(share) {
  const url = /** @type {HTMLInputElement} */ ($("#share-url"));
  url.value = share?.url ?? "";
  /** @type {HTMLButtonElement} */ ($("#copy-link")).disabled = !share?.url;
  const people = share?.participants.filter((person) => person.role !== "OWNER") ?? [];
  const list = $("#share-people");
  if (!people.length) {
    list.replaceChildren(element("li", "Nobody yet: invite someone by email.", {class: "empty"}));
    return;
  }
  list.replaceChildren(...people.map((person) => {
    const row = element("li");
    const who = person.user?.name ?? person.email ?? person.user?.email ?? "someone";
    row.append(element("span", who, {class: "name"}),
      element("span", permissionWords(person.permission), {class: "permission"}),
      element("span", person.status === "ACCEPTED" ? "joined" : "invited", {class: `badge ${person.status === "ACCEPTED" ? "joined" : ""}`}));
    return row;
  }));
  render();
}

$("#share-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = /** @type {HTMLFormElement} */ (event.target);
  const email = /** @type {HTMLInputElement} */ (form.elements.namedItem("email")).value.trim();
  const permission = /** @type {"READ_WRITE" | "READ_ONLY"} */ (/** @type {HTMLSelectElement} */ (form.elements.namedItem("permission")).value);
  const list = currentList();
  if (!list || !session) return;
  const database = session.container.privateDatabase;
  const participant = {email, permission};
  try {
    // The first person makes the share; later ones join it.
    const share = await database.share(list.zoneID)
      ? await database.setParticipant(list.zoneID, participant)
      : await database.saveShare(list.zoneID, {title: titleOf(list.zoneID), participants: [participant]});
    shares.set(shareKey("PRIVATE", list.zoneID.key), share);
    showShare(share);
    form.reset();
    /** @type {HTMLInputElement} */ (form.elements.namedItem("email")).focus();
  } catch (error) { report(error); }
});

$("#copy-link").addEventListener("click", async () => {
  const url = /** @type {HTMLInputElement} */ ($("#share-url"));
  try {
    await navigator.clipboard.writeText(url.value);
    $("#copied").textContent = "Link copied.";
  } catch {
    // No clipboard permission (an http page elsewhere than localhost): select it for Ctrl+C.
    url.select();
    $("#copied").textContent = "Press Ctrl+C (⌘C) to copy the selected link.";
  }
});

$("#close-share").addEventListener("click", () => sheet.close());

$("#accept-share").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = /** @type {HTMLFormElement} */ (event.target);
  const field = /** @type {HTMLInputElement} */ (form.elements.namedItem("url"));
  if (!session) return;
  try {
    const metadata = await session.container.acceptShare(field.value.trim());
    const copy = session.copies.SHARED;
    await copy.sync();
    if (metadata.zoneID) current = {scope: "SHARED", key: copy.engine.canonicalZoneID(metadata.zoneID).key};
    form.reset();
    await loadShares();
  } catch (error) { report(error); }
});

// MARK: Offline, push

// The copies send and fetch by themselves when the network is back (and
// when the page is shown again, and when the live connection returns).
addEventListener("online", () => { render(); void loadShares(); });
addEventListener("offline", render);

if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("sw.js").catch(report);
  // sw.js says a push arrived: fetch what changed.
  navigator.serviceWorker.addEventListener("message", (event) => {
    if (event.data?.type === "changes") for (const copy of Object.values(session?.copies ?? {})) copy.sync().catch(reportBackground);
  });
}

$("#notify").addEventListener("click", async () => {
  if (!session) return;
  try {
    const registration = await navigator.serviceWorker.ready;
    await session.canopy.subscribeToWebPush(registration, session.container);
    // Pushes come for the server's subscriptions: one per database, told of every change.
    for (const scope of /** @type {Scope[]} */ (["PRIVATE", "SHARED"])) {
      await session.container.database(scope).saveSubscription({subscriptionID: `todo-${scope.toLowerCase()}`, kind: "DATABASE"});
    }
    $("#notify").textContent = "Notifications on";
  } catch (error) { report(error); }
});

void open();
