// "Move to…" (docs/API.md §17): a record, with the records under it, goes to
// another zone the person can write to, keeping its name; nothing moves
// when anything is refused, and the reason is shown.

import {h, message, replace, announce} from "./dom.js";
import {database, describe} from "./canopy.js";
import {recordRoute} from "./routes.js";


/** Opens the dialog for `record` of `zone` ({zoneName, ownerName}), as `me`. */
export async function openMoveDialog({zone, record, me}) {
  const feedback = h("div", {class: "feedback"});
  const body = h("div", {class: "sheet-body"}, h("p", {}, "Loading zones…"));
  const heading = h("h2", {id: "move-heading", tabindex: "-1"}, `Move ${record.recordName}`);
  const cancel = h("button", {type: "button", id: "move-cancel"}, "Cancel");
  const dialog = h("dialog", {class: "sheet", id: "move-dialog", "aria-labelledby": "move-heading"},
    heading, feedback, body, h("div", {class: "sheet-actions"}, cancel));
  cancel.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();

  let zones;
  try {
    const [own, shared] = await Promise.all([database("PRIVATE").zones(), database("SHARED").zones()]);
    zones = [...own.map((z) => ({...z, scope: "PRIVATE"})), ...shared.map((z) => ({...z, scope: "SHARED"}))]
      .filter((z) => !(z.zoneName === zone.zoneName && z.ownerName === zone.ownerName));
  } catch (error) {
    replace(body, message("error", describe(error)));
    return;
  }
  if (!zones.length) {
    replace(body, h("p", {}, "There is no other zone to move it to."));
    return;
  }
  const target = h("select", {id: "move-target", "aria-label": "Move to the zone"}, zones.map((z, index) =>
    h("option", {value: String(index)}, z.scope === "PRIVATE" ? z.zoneName : `${z.zoneName} (shared by ${z.ownerName})`)));
  const parent = h("input", {type: "text", id: "move-parent", autocomplete: "off", placeholder: "optional"});
  const go = h("button", {type: "submit", class: "primary", id: "move-go"}, "Move");
  const form = h("form", {id: "move-form"},
    h("p", {}, `${record.recordName} and the records under it move together and keep their names. Everyone who syncs either zone sees them leave one and arrive in the other.`),
    h("div", {class: "control"}, h("label", {for: "move-target"}, "To the zone"), target),
    h("div", {class: "control"}, h("label", {for: "move-parent"}, "Under the record"), parent,
      h("p", {class: "hint"}, "Needed to move it into a record someone shared with you: the shared record's name.")),
    go);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = zones[Number(target.value)];
    go.disabled = true;
    try {
      const moveRecords = await database("PRIVATE").moveRecords(
        {zoneName: zone.zoneName, ownerName: zone.ownerName}, {zoneName: chosen.zoneName, ownerName: chosen.ownerName},
        [record.recordName], {withDescendants: true, parent: parent.value.trim() || null});
      if (moveRecords.errors.length) {
        go.disabled = false;
        replace(feedback, message("error", "Nothing was moved: ", moveRecords.errors.map((e) => e.message).join("; ")));
        return;
      }
      dialog.close();
      announce(`Moved ${moveRecords.moved.length} record${moveRecords.moved.length === 1 ? "" : "s"} to ${chosen.zoneName}`);
      location.hash = recordRoute(chosen.scope, chosen.ownerName, chosen.zoneName, record.recordName);
    } catch (error) {
      go.disabled = false;
      replace(feedback, message("error", error.code === "PERMISSION_FAILURE"
        ? "Nothing was moved: moving needs permission to edit it where it is and where it goes (in a shared record, name that record under “Under the record”)."
        : describe(error)));
    }
  });
  replace(body, form);
  target.focus();
  void me;
}
