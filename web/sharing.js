// The sharing sheet, as UICloudSharingController: for the owner, the
// title, the people invited (change their permission, remove them), an
// invitation by email or phone, the public link and its permission, copying
// the link, and stopping sharing; for a participant, the share from their
// side and leaving it. Since issue 38: access requests (allow them; approve,
// deny, block, unblock), the share's activity log, and administrators
// managing people from the sheet as the owner does (but for the title, the
// link and stopping sharing, which stay the owner's). Every change is one
// call of CanopyJS's (saveShare, setParticipant, removeParticipant,
// decideAccessRequest, shareActivity); the sheet then reads the share
// again, so it shows what the server holds.

import {h, labelled, message, replace, announce, formatDate} from "./dom.js";
import {container, database, describe} from "./canopy.js";

/** Entries of the activity log shown at a time. */
const ACTIVITY_PAGE = 20;

const EVENT_WORDS = {
  SHARE_CREATED: "shared it", SHARE_DELETED: "stopped sharing", ZONE_DELETED: "deleted the zone", ROOT_DELETED: "deleted the shared record",
  INVITED: "invited", ACCEPTED: "accepted", PERMISSION_CHANGED: "changed the permission of", REMOVED: "removed", LEFT: "left",
  REQUEST_MADE: "asked for access", REQUEST_APPROVED: "approved the request of", REQUEST_DENIED: "denied the request of",
  REQUESTER_BLOCKED: "blocked", REQUESTER_UNBLOCKED: "unblocked",
  PUBLIC_PERMISSION_CHANGED: "changed who can open the link", ACCESS_REQUESTS_CHANGED: "changed whether people may ask for access",
};

const PERMISSION_WORDS = {READ_ONLY: "Can view", READ_WRITE: "Can edit"};

/**
 * What the signed-in person may do in a zone: {owner, canWrite, share,
 * ownerDisplayName}. The owner may do anything; a participant of a
 * zone-wide share has its permission; in a zone shared record by record,
 * canWrite is null: each record's share decides (recordAccess).
 */
export async function accessTo(scope, zone) {
  // The public database has no shares: its types' grants decide (public.js).
  if (scope === "PUBLIC") return {owner: false, canWrite: null, share: null, isPublic: true};
  const share = await database(scope).share(zone);
  if (scope === "PRIVATE") return {owner: true, canWrite: true, share};
  if (!share) {
    // Record-rooted shares only: make sure the zone is there for the caller.
    await database("SHARED").zoneChanges(zone, {limit: 1, desiredKeys: []});
    return {owner: false, canWrite: null, share: null};
  }
  const metadata = await container.shareMetadata(share.url);
  return {owner: false, canWrite: metadata.permission === "READ_WRITE", role: metadata.role, share, ownerDisplayName: metadata.ownerDisplayName};
}

/**
 * What the person may do with one record of a zone shared record by
 * record: the share whose root the record's parent chain reaches decides
 * ({canWrite, rootRecordName}). Unknown: read only.
 */
export async function recordAccess(zone, record) {
  let current = record;
  const seen = new Set();
  while (current && !seen.has(current.recordName) && seen.size < 64) {
    seen.add(current.recordName);
    if (current.share?.url) {
      const metadata = await container.shareMetadata(current.share.url);
      return {canWrite: metadata.permission === "READ_WRITE", rootRecordName: current.recordName, ownerDisplayName: metadata.ownerDisplayName};
    }
    if (!current.parent) break;
    const [result] = await database("SHARED").lookup(zone, [current.parent], {desiredKeys: []});
    current = result?.record;
  }
  return {canWrite: false, rootRecordName: null};
}

function personName(participant) {
  return participant.user?.name ?? participant.user?.email ?? participant.email ?? participant.user?.phone ?? participant.phone ?? participant.user?.userRecordName ?? "someone";
}

function permissionSelect(value, label, {includeNone = false, disabled = false} = {}) {
  const options = includeNone
    ? [["NONE", "Only people invited"], ["READ_ONLY", "Anyone with the link can view"], ["READ_WRITE", "Anyone with the link can edit"]]
    : [["READ_ONLY", "Can view"], ["READ_WRITE", "Can edit"]];
  return h("select", {"aria-label": label, disabled}, options.map(([option, words]) => h("option", {value: option, selected: option === value}, words)));
}

/** Opens the sheet for a zone-wide share (rootRecordName null) or a record's. */
export function openSharingSheet({scope, zone, rootRecordName, me, onChange}) {
  const body = h("div", {class: "sheet-body"});
  const feedback = h("div", {class: "feedback"});
  const heading = h("h2", {id: "sheet-heading", tabindex: "-1"}, "Sharing");
  const close = h("button", {type: "button", id: "sheet-done"}, "Done");
  const dialog = h("dialog", {class: "sheet", id: "sharing-sheet", "aria-labelledby": "sheet-heading"},
    heading, feedback, body, h("div", {class: "sheet-actions"}, close));
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => { dialog.remove(); onChange?.(); });
  document.body.append(dialog);
  dialog.showModal();

  const owner = scope === "PRIVATE";
  const target = rootRecordName ? `the record ${rootRecordName}` : `the zone ${zone.zoneName}`;
  // An administrator names the owner in every change (the zone's ownerName).
  const zoneID = {zoneName: zone.zoneName, ownerName: owner ? null : zone.ownerName};
  const shares = database(owner ? "PRIVATE" : "SHARED");
  const options = {rootRecordName};

  async function run(work, done) {
    replace(feedback);
    // The sheet is drawn again after each change: keep the person's place.
    const focused = document.activeElement;
    const place = focused?.id && !focused.id.startsWith("field-") ? `#${CSS.escape(focused.id)}`
      : focused?.name ? `[name="${CSS.escape(focused.name)}"]`
      : focused?.closest?.("[data-person]") ? `[data-person="${CSS.escape(focused.closest("[data-person]").dataset.person)}"] ${focused.tagName.toLowerCase()}` : null;
    try {
      await work();
      await load();
      if (done) announce(done);
    } catch (error) {
      replace(feedback, message("error", describe(error)));
    }
    const again = place ? dialog.querySelector(place) : null;
    (again ?? heading).focus?.();
  }

  async function load() {
    let share;
    try {
      share = await database(scope).share(zone, {rootRecordName});
    } catch (error) {
      replace(body, message("error", describe(error)));
      return;
    }
    if (owner) return drawOwner(share);
    const mine = share?.participants.find((participant) => participant.user?.userRecordName === me.userRecordName);
    if (mine?.role === "ADMINISTRATOR") drawOwner(share, {administrator: true}); else drawParticipant(share);
  }

  function drawOwner(share, {administrator = false} = {}) {
    const title = h("input", {type: "text", name: "title", value: share?.title ?? "", autocomplete: "off"});
    if (!share) {
      heading.textContent = `Share ${target}`;
      const start = h("button", {type: "button", class: "primary", id: "start-sharing"}, "Share");
      start.addEventListener("click", () => run(() => shares.saveShare(zoneID, {...options, title: title.value.trim() || null}),
        "Shared. Now invite people or turn the link on."));
      replace(body,
        h("p", {}, `${rootRecordName ? "This record and the records under it are" : "This zone is"} not shared yet. Sharing makes a link you control; nobody can open it until you invite them or turn the link on.`),
        labelled("Title", title, "What invited people see, e.g. “Family recipes”."),
        start);
      return;
    }
    heading.textContent = administrator ? `People of “${share.title ?? zone.zoneName}”` : `Share “${share.title ?? zone.zoneName}”`;
    const saveTitle = h("button", {type: "button", id: "save-title"}, "Save title");
    saveTitle.addEventListener("click", () => run(() => shares.saveShare(zoneID, {...options, title: title.value.trim() || null}), "Title saved"));

    const people = share.participants.filter((participant) => participant.role !== "OWNER");
    const list = h("ul", {class: "people", id: "participants"}, people.length ? people.map((participant) => {
      const who = personName(participant);
      // An administrator manages invited people (PRIVATE_USER), not other administrators.
      const locked = participant.role === "PUBLIC_USER" || (administrator && participant.role !== "PRIVATE_USER");
      const permission = permissionSelect(participant.permission, `Permission of ${who}`, {disabled: locked});
      permission.addEventListener("change", () => run(() => shares.setParticipant(zoneID,
        {...identify(participant), permission: permission.value, role: participant.role === "ADMINISTRATOR" ? "ADMINISTRATOR" : "PRIVATE_USER"}, options),
        `${who} ${permission.value === "READ_WRITE" ? "can edit" : "can view"} now`));
      // An invitation not yet accepted is removed by the contact it was sent to: email or phone.
      const removable = !locked || participant.role === "PUBLIC_USER" && !administrator;
      const remove = h("button", {type: "button", class: "danger small", disabled: !removable, "aria-label": `Remove ${who}`}, "Remove");
      remove.addEventListener("click", () => run(() => shares.removeParticipant(zoneID, {
        userRecordName: participant.user?.userRecordName ?? null, email: participant.user ? null : participant.email ?? null,
        phone: participant.user || participant.email ? null : participant.phone ?? null}, options), `${who} removed`));
      const how = participant.status === "PENDING" ? "invited" : participant.role === "PUBLIC_USER" ? "joined by link"
        : participant.isApprovedRequester ? "asked and was approved" : participant.role === "ADMINISTRATOR" ? "administrator" : "accepted";
      return h("li", {dataset: {person: who}},
        h("span", {class: "person"}, h("strong", {}, who), h("span", {class: "muted"}, ` ${how}`)),
        permission, remove);
    }) : h("li", {class: "empty"}, "Nobody yet."));

    const contact = h("input", {type: "text", name: "contact", autocomplete: "off", inputmode: "email", placeholder: "name@example.com or +15551234567"});
    const invitePermission = permissionSelect("READ_ONLY", "Permission for the invitation");
    const invite = h("form", {class: "inline-form", id: "invite"},
      labelled("Invite by email or phone", contact), invitePermission, h("button", {type: "submit", id: "invite-button"}, "Invite"));
    invite.addEventListener("submit", (event) => {
      event.preventDefault();
      const value = contact.value.trim();
      if (!value) { replace(feedback, message("error", "Type an email address or a phone number to invite.")); contact.focus(); return; }
      const participant = value.includes("@") ? {email: value} : {phone: value};
      run(() => shares.setParticipant(zoneID, {...participant, permission: invitePermission.value}, options), `${value} invited. Send them the link.`);
    });

    const link = permissionSelect(share.publicPermission, "Who can open the link", {includeNone: true});
    link.id = "public-permission";
    link.addEventListener("change", () => run(() => shares.saveShare(zoneID, {...options, publicPermission: link.value}),
      link.value === "NONE" ? "Link turned off: only invited people can open it" : "Anyone with the link can open it now"));

    const stop = h("button", {type: "button", class: "danger", id: "stop-sharing"}, "Stop sharing");
    stop.addEventListener("click", async () => {
      if (!confirm(`Stop sharing ${target}? Everyone else loses access at once.`)) return;
      await run(() => shares.deleteShare(zoneID, options), "Sharing stopped");
    });

    const requests = requestsSection(share);
    const activity = h("section", {id: "activity", "aria-labelledby": "activity-heading"}, h("h3", {id: "activity-heading"}, "Activity"));
    showActivity(activity, null, peopleNames(share));
    if (administrator) {
      replace(body,
        h("p", {class: "hint"}, `You administer this share: you invite and remove people and decide who may join. ${share.owner?.user?.name ?? zone.ownerName} keeps the title and the link.`),
        h("h3", {}, "People"), list, invite, requests, linkBox(share.url), activity);
      return;
    }
    const allow = h("input", {type: "checkbox", id: "allow-requests", checked: share.allowsAccessRequests});
    allow.addEventListener("change", () => run(() => shares.saveShare(zoneID, {...options, allowsAccessRequests: allow.checked}),
      allow.checked ? "People with the link may now ask for access" : "Nobody can ask for access now"));
    replace(body,
      h("div", {class: "inline-form"}, labelled("Title", title), saveTitle),
      h("h3", {}, "People"), list, invite,
      h("h3", {}, "Link"),
      h("div", {class: "control"}, h("label", {for: "public-permission"}, "Who can open the link"), link),
      h("div", {class: "control inline"}, allow, h("label", {for: "allow-requests"}, "People who are not invited may ask for access")),
      linkBox(share.url),
      h("p", {class: "hint"}, "Invited people sign in with the address or phone they were invited with, open the link and accept."),
      requests,
      activity,
      stop);
  }

  // Pending requests with Approve (at a permission), Deny and Block; blocked people with Unblock.
  function requestsSection(share) {
    const section = h("section", {id: "access-requests", "aria-labelledby": "requests-heading"}, h("h3", {id: "requests-heading"}, "Access requests"));
    const pending = share.accessRequests.filter((request) => request.status === "PENDING");
    const blocked = share.accessRequests.filter((request) => request.status === "BLOCKED");
    if (!share.accessRequests.length) {
      section.append(h("p", {class: "muted"}, share.allowsAccessRequests ? "Nobody is asking." : "Nobody can ask: people who are not invited learn nothing from the link."));
      return section;
    }
    const decide = (decision, request, extra = {}, done) => run(() => shares.decideAccessRequest(zoneID, request.user.userRecordName, decision, {...options, ...extra}), done);
    section.append(h("ul", {class: "people", id: "pending-requests"}, pending.map((request) => {
      const who = personName(request);
      const contact = request.user.email ?? request.user.phone ?? "";
      const permission = permissionSelect("READ_ONLY", `Permission to give ${who}`);
      const approve = h("button", {type: "button", class: "primary small", "aria-label": `Approve ${who}`}, "Approve");
      approve.addEventListener("click", () => decide("approve", request, {permission: permission.value}, `${who} approved: they can open it now`));
      const deny = h("button", {type: "button", class: "small", "aria-label": `Deny ${who}`}, "Deny");
      deny.addEventListener("click", () => decide("deny", request, {}, `${who} denied; they may ask again`));
      const block = h("button", {type: "button", class: "danger small", "aria-label": `Block ${who}`}, "Block");
      block.addEventListener("click", () => decide("block", request, {}, `${who} blocked; they cannot ask again`));
      return h("li", {dataset: {person: who}},
        h("span", {class: "person"}, h("strong", {}, who), h("span", {class: "muted"}, ` ${contact} · asked ${formatDate(request.requestedAt)}`)),
        permission, approve, deny, block);
    })));
    if (blocked.length) {
      section.append(h("h4", {}, "Blocked"), h("ul", {class: "people", id: "blocked-requesters"}, blocked.map((request) => {
        const who = personName(request);
        const unblock = h("button", {type: "button", class: "small", "aria-label": `Unblock ${who}`}, "Unblock");
        unblock.addEventListener("click", () => decide("unblock", request, {}, `${who} may ask again`));
        return h("li", {dataset: {person: who}}, h("span", {class: "person"}, h("strong", {}, who)), unblock);
      })));
    }
    return section;
  }

  // The share's log, oldest first, a page at a time (shareActivity reads
  // the server's pages as the iterator is consumed; one entry is read ahead
  // to know whether there is more).
  async function showActivity(section, log, names) {
    const named = (userRecordName) => names.get(userRecordName) ?? userRecordName;
    section.querySelector("#activity-more")?.remove();
    log ??= {entries: database(scope).shareActivity(zone, {rootRecordName, pageSize: ACTIVITY_PAGE}), ahead: null};
    try {
      const page = log.ahead ? [log.ahead] : [];
      log.ahead = null;
      for (;;) {
        const next = await log.entries.next();
        if (next.done) break;
        if (page.length === ACTIVITY_PAGE) { log.ahead = next.value; break; }
        page.push(next.value);
      }
      let list = section.querySelector("#activity-list");
      if (!list) section.append(list = h("ol", {id: "activity-list", class: "activity"}));
      for (const entry of page) {
        const actor = entry.actor === me.userRecordName ? "You" : entry.actor ? named(entry.actor) : "The server";
        const subject = entry.subject ? (entry.subject === me.userRecordName ? " you" : ` ${named(entry.subject)}`) : "";
        const permission = entry.detail?.to?.permission ?? entry.detail?.permission ?? entry.detail?.to;
        list.append(h("li", {dataset: {event: entry.event}},
          h("time", {datetime: new Date(entry.at).toISOString()}, formatDate(entry.at)), " ",
          `${actor} ${EVENT_WORDS[entry.event] ?? entry.event}${["REQUEST_MADE", "LEFT", "ACCEPTED"].includes(entry.event) ? "" : subject}`,
          typeof permission === "string" ? h("span", {class: "muted"}, ` (${PERMISSION_WORDS[permission] ?? permission})`) : null));
        if (["REQUEST_MADE", "LEFT", "ACCEPTED"].includes(entry.event) && entry.subject && entry.subject !== entry.actor) list.lastChild.append(h("span", {class: "muted"}, ` ${named(entry.subject)}`));
      }
      if (!list.children.length) list.append(h("li", {class: "empty"}, "Nothing yet."));
      if (log.ahead) {
        const more = h("button", {type: "button", class: "small", id: "activity-more"}, "Show more");
        more.addEventListener("click", () => showActivity(section, log, names));
        section.append(more);
      }
    } catch (error) {
      section.append(message("error", describe(error)));
    }
  }

  function drawParticipant(share) {
    if (!share) {
      replace(body, message("error", "This is no longer shared with you."));
      return;
    }
    heading.textContent = share.title ?? zone.zoneName;
    const mine = share.participants.find((participant) => participant.user?.userRecordName === me.userRecordName);
    const leave = h("button", {type: "button", class: "danger", id: "leave-share"}, "Leave share");
    leave.addEventListener("click", async () => {
      if (!confirm("Leave this share? You will need a new invitation to see it again.")) return;
      try {
        await database("SHARED").leaveShare(zone, {rootRecordName});
        dialog.close();
        location.hash = "#/";
      } catch (error) {
        replace(feedback, message("error", describe(error)));
      }
    });
    replace(body,
      h("p", {}, `Shared by ${share.owner?.user?.name ?? zone.ownerName}. `, mine ? `You ${mine.permission === "READ_WRITE" ? "can view and edit" : "can view (read only)"}.` : ""),
      h("h3", {}, "People"),
      h("ul", {class: "people", id: "participants"}, share.participants.map((participant) => h("li", {},
        h("span", {class: "person"}, h("strong", {}, personName(participant)),
          h("span", {class: "muted"}, participant.role === "OWNER" ? " owner" : participant.user?.userRecordName === me.userRecordName ? " you" : "")),
        participant.role === "OWNER" ? null : h("span", {}, PERMISSION_WORDS[participant.permission] ?? "")))),
      linkBox(share.url),
      (() => { const activity = h("section", {id: "activity"}, h("h3", {}, "Your activity")); showActivity(activity, null, peopleNames(share)); return activity; })(),
      leave);
  }

  load();
  return dialog;
}

// Who the log's userRecordNames are, by the names the share shows.
function peopleNames(share) {
  const names = new Map();
  for (const person of [share.owner, ...share.participants, ...share.accessRequests]) {
    const user = person?.user;
    if (user?.userRecordName) names.set(user.userRecordName, user.name ?? user.email ?? user.phone ?? user.userRecordName);
  }
  return names;
}

function identify(participant) {
  if (participant.user?.userRecordName) return {userRecordName: participant.user.userRecordName};
  if (participant.email) return {email: participant.email};
  return {phone: participant.phone};
}

// The link, selectable, with a button that copies it.
function linkBox(url) {
  const field = h("input", {type: "text", readOnly: true, value: url, id: "share-link", class: "share-url"});
  field.addEventListener("focus", () => field.select());
  const copy = h("button", {type: "button", id: "copy-link"}, "Copy link");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(url);
      announce("Link copied");
      copy.textContent = "Copied";
    } catch {
      field.focus();
      field.select();
      announce("Press Ctrl+C (or ⌘C) to copy the selected link");
    }
  });
  return h("div", {class: "inline-form"}, labelled("Share link", field), copy);
}
