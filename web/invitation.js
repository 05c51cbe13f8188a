// The invitation page (/share/<token>): signs the person in if they are
// not, asks `shareMetadata` as them (so row-level security decides what
// they learn: nothing of a private share they were not invited to), and
// offers Accept, which accepts and opens the shared zone in the console.
// Before accepting it previews a shared record (its title, and a picture
// when it has one); where the owner allows access requests, someone not
// invited may ask for access instead (docs/API.md §17).

import {h, message, replace} from "./dom.js";
import {container as canopy, describe, endSession} from "./canopy.js";
import {currentToken} from "./session.js";
import {renderSignIn} from "./signin.js";
import {zoneRoute, recordRoute} from "./routes.js";

const main = document.getElementById("invitation");
const actions = document.getElementById("invitation-actions");
const url = main.dataset.shareUrl;

/** The root record's fields the preview reads. */
const PREVIEW_KEYS = ["title", "name", "image", "photo", "thumbnail"];

// The root record's preview: its title (or name) and its first image asset.
function preview(metadata) {
  const fields = metadata.rootRecord?.fields ?? {};
  const text = (value) => typeof value === "string" ? value : null;
  const title = text(fields.title) ?? text(fields.name);
  const image = ["image", "photo", "thumbnail"].map((key) => fields[key]).find((value) => value?.downloadURL && /^image\//.test(value.contentType ?? ""));
  const picture = image ? h("img", {id: "root-thumbnail", class: "preview", alt: title ?? "", src: image.downloadURL})
    : metadata.thumbnailImageData ? h("img", {id: "root-thumbnail", class: "preview", alt: "", src: `data:image/png;base64,${metadata.thumbnailImageData}`}) : null;
  if (!title && !picture) return null;
  return h("figure", {id: "root-preview", class: "preview"}, picture, title ? h("figcaption", {id: "root-title"}, title) : null);
}

function openIn(metadata) {
  const scope = metadata.role === "OWNER" ? "PRIVATE" : "SHARED";
  return "/" + (metadata.rootRecordName
    ? recordRoute(scope, metadata.zone.ownerName, metadata.zone.zoneName, metadata.rootRecordName)
    : zoneRoute(scope, metadata.zone.ownerName, metadata.zone.zoneName));
}

function describeShare(metadata) {
  const what = metadata.rootRecordName ? `the record ${metadata.rootRecordName} and the records under it` : `the zone ${metadata.zone.zoneName}`;
  const can = metadata.permission === "READ_WRITE" ? "view and edit" : "view";
  return `${metadata.ownerDisplayName ?? "Someone"} shared ${what} with you. You can ${can} it.`;
}

async function show() {
  if (!currentToken()) {
    const box = h("div");
    replace(actions, h("p", {}, "Sign in to see whether this was shared with you and to accept it."), box);
    renderSignIn(box, () => show(), {heading: "Sign in to accept"});
    return;
  }
  replace(actions, h("p", {}, "Checking the invitation…"));
  let me, metadata;
  try {
    me = await canopy.currentUser();
    metadata = await canopy.shareMetadata(url, {rootRecordKeys: PREVIEW_KEYS});
  } catch (error) {
    if (error.code === "NOT_AUTHENTICATED") return show();
    const who = me?.name ?? me?.email ?? "you";
    replace(actions,
      message("error", error.code === "PERMISSION_FAILURE"
        ? `This link does not lead to anything shared with ${who}. If someone invited you, sign in with the account of the address they invited, or ask them to invite you again.`
        : describe(error)),
      switchAccount(me));
    return;
  }
  document.getElementById("share-title").textContent = metadata.title ?? metadata.zone.zoneName;
  document.title = `${metadata.title ?? metadata.zone.zoneName} · Canopy`;
  document.getElementById("share-summary")?.remove();
  const summary = h("p", {id: "share-summary"}, describeShare(metadata));
  if (metadata.role === "OWNER") {
    replace(actions, h("p", {}, "You own this share."), h("a", {class: "button primary", href: openIn(metadata)}, "Open in the console"), switchAccount(me));
  } else if (metadata.permission === "NONE" && metadata.allowsAccessRequests && metadata.status !== "PENDING") {
    // Not invited (or removed), but the owner lets people ask.
    const feedback = h("div", {class: "feedback"});
    if (metadata.accessRequestStatus === "PENDING") {
      replace(actions, h("p", {id: "request-sent"}, `You asked ${metadata.ownerDisplayName ?? "the owner"} for access. You can open it once they approve.`), switchAccount(me));
      return;
    }
    const request = h("button", {type: "button", class: "primary", id: "request-access"}, "Request access");
    request.addEventListener("click", async () => {
      request.disabled = true;
      try {
        await canopy.requestShareAccess(url);
        show();
      } catch (error) {
        request.disabled = false;
        replace(feedback, message("error", describe(error)));
      }
    });
    replace(actions, h("p", {}, `${metadata.ownerDisplayName ?? "The owner"} has not shared this with ${me.name ?? me.email ?? "you"}, but you may ask for access.`),
      feedback, request, switchAccount(me));
  } else if (metadata.status === "REMOVED" || metadata.permission === "NONE") {
    replace(actions, message("error", `The owner removed ${me.name ?? me.email ?? "you"} from this share. Ask them to add you again.`), switchAccount(me));
  } else if (metadata.status === "ACCEPTED") {
    replace(actions, summary, h("p", {}, "You have accepted it."), h("a", {class: "button primary", id: "open-share", href: openIn(metadata)}, "Open"), switchAccount(me));
  } else {
    const accept = h("button", {type: "button", class: "primary", id: "accept-share"}, "Accept");
    const feedback = h("div", {class: "feedback"});
    accept.addEventListener("click", async () => {
      accept.disabled = true;
      try {
        const accepted = await canopy.acceptShare(url);
        location.assign(openIn(accepted));
      } catch (error) {
        accept.disabled = false;
        replace(feedback, message("error", describe(error)));
      }
    });
    replace(actions, summary, preview(metadata), h("p", {}, `Signed in as ${me.name ?? me.email ?? me.userRecordName}.`), feedback, accept, switchAccount(me));
  }
}

function switchAccount(me) {
  if (!me) return null;
  return h("p", {class: "muted"}, h("button", {type: "button", class: "link", onclick: async () => { await endSession(); show(); }}, "Use another account"));
}

show();
