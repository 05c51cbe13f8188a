// Zones: the person's own (PRIVATE) and those shared with them (SHARED),
// kept current by the database feeds, and a form to make a new zone.

import {h, labelled, message, replace, announce} from "./dom.js";
import {database, describe, followChanges} from "./canopy.js";
import {zoneRoute} from "./routes.js";
import {publicRoute} from "./public.js";


export async function renderZones(view, context) {
  document.title = "Zones · Canopy";
  const privateList = h("ul", {class: "zones", id: "private-zones", "aria-labelledby": "private-heading"});
  const sharedList = h("ul", {class: "zones", id: "shared-zones", "aria-labelledby": "shared-heading"});
  const feedback = h("div", {class: "feedback"});
  const name = h("input", {type: "text", name: "zoneName", required: true, pattern: "[A-Za-z0-9.\\-][A-Za-z0-9_.\\-]{0,254}", autocomplete: "off"});
  const create = h("form", {class: "inline-form", id: "new-zone"},
    labelled("New zone", name, "Letters, digits, _ . - (not starting with _)."),
    h("button", {type: "submit"}, "Create zone"));
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const saveZone = await database("PRIVATE").saveZone(name.value.trim());
      location.hash = zoneRoute("PRIVATE", saveZone.ownerName, saveZone.zoneName);
    } catch (error) {
      replace(feedback, message("error", describe(error)));
    }
  });
  replace(view,
    h("h1", {}, "Zones"),
    feedback,
    h("section", {class: "panel"}, h("h2", {id: "private-heading"}, "Your zones"), privateList, create),
    h("section", {class: "panel"}, h("h2", {id: "shared-heading"}, "Shared with you"), sharedList),
    h("section", {class: "panel"}, h("h2", {id: "public-heading"}, "Public"),
      h("p", {}, h("a", {href: publicRoute, id: "public-zone"}, "The public database"),
        h("span", {class: "muted"}, " — records everyone may read; each type's grants say who may add and change them."))));

  async function load() {
    try {
      const [own, shared] = await Promise.all([database("PRIVATE").zones({withShares: true}), database("SHARED").zones({withShares: true})]);
      const data = {private: own, shared};
      replace(privateList, data.private.map((zone) => {
        const share = zone.share;
        const people = share ? share.participants.filter((p) => p.status !== "REMOVED").length - 1 : 0;
        const note = share ? (share.publicPermission !== "NONE" ? "shared by link" : `shared with ${people} ${people === 1 ? "person" : "people"}`) : null;
        return h("li", {}, h("a", {href: zoneRoute("PRIVATE", zone.ownerName, zone.zoneName)}, zone.zoneName),
          note ? h("span", {class: "badge"}, note) : null);
      }));
      replace(sharedList, data.shared.length ? data.shared.map((zone) => {
        const owner = zone.share?.owner?.user?.name;
        return h("li", {}, h("a", {href: zoneRoute("SHARED", zone.ownerName, zone.zoneName)}, zone.share?.title ?? zone.zoneName),
          h("span", {class: "muted"}, owner ? ` from ${owner}` : ` (${zone.zoneName})`));
      }) : h("li", {class: "empty"}, "Nothing yet. Open an invitation link to accept a share."));
    } catch (error) {
      replace(feedback, message("error", describe(error)));
    }
  }
  await load();

  // Live: a zone made, shared, accepted or left elsewhere appears here.
  const stops = ["PRIVATE", "SHARED"].map((scope) => followChanges("databaseChanges", {scope}, () => {
    load();
    announce("Zones updated");
  }));
  context.setLeaving(() => stops.forEach((stop) => stop()));
}
