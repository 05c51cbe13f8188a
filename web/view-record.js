// A record: its fields shown and edited by type, saved with its change
// tag (IF_SERVER_RECORD_UNCHANGED), so a save that crosses someone else's
// is shown as the conflict it is, with their version beside yours.

import {h, labelled, message, replace, announce, formatDate} from "./dom.js";
import {container, database, describe, followChanges, formRecord} from "./canopy.js";
import {FIELD_TYPES, FieldError, display, editor, typeOf} from "./fields.js";
import {recordRoute, zoneRoute} from "./routes.js";
import {accessTo, openSharingSheet, recordAccess} from "./sharing.js";
import {publicAccessOf, mayWrite} from "./public.js";
import {openMoveDialog} from "./move.js";


let counter = 0;

export async function renderRecord(view, {scope, ownerName, zoneName, recordName, recordType}, context) {
  const zone = {zoneName, ownerName};
  const isNew = recordName === null;
  const zoneLink = zoneRoute(scope, ownerName, zoneName);
  document.title = `${recordName ?? "New record"} · ${zoneName} · Canopy`;
  replace(view, h("p", {}, "Loading…"));

  let access, schema, record;
  try {
    [access, schema] = await Promise.all([accessTo(scope, zone),
      context.me ? container.recordTypes() : []]);
    if (isNew) {
      record = {recordName: "", recordType: recordType ?? "", fields: {}, parent: null};
    } else {
      const [result] = await database(scope).lookup(zone, [recordName]);
      if (!result.record) throw result.error ?? Object.assign(new Error("not found"), {code: "UNKNOWN_ITEM"});
      record = formRecord(result.record);
    }
    // The public database: the type's grants decide, and for writeOwn the record's creator.
    if (access.isPublic) {
      const grants = publicAccessOf(schema, record.recordType, context.me);
      access = {...access, canWrite: isNew ? grants.create : mayWrite(grants, record, context.me)};
    }
    // Shared record by record: this record's share decides.
    if (access.canWrite === null && !isNew) access = {...access, ...(await recordAccess(zone, record))};
  } catch (error) {
    if (!context.isCurrent()) return;
    replace(view, h("nav", {class: "crumbs"}, h("a", {href: "#/"}, "Zones"), " › ", h("a", {href: zoneLink}, zoneName)),
      h("h1", {}, recordName ?? "New record"), message("error", error.code === "UNKNOWN_ITEM" ? "This record does not exist or is no longer shared with you." : describe(error)));
    return;
  }
  if (!context.isCurrent()) return;
  const readOnly = access.canWrite === false;
  const types = (type) => Object.fromEntries((schema.find((candidate) => candidate.name === type)?.fields ?? []).map((field) => [field.name, field.type]));
  const linkTo = (name) => recordRoute(scope, ownerName, zoneName, name);
  const feedback = h("div", {class: "feedback", id: "record-feedback"});
  let changeTag = record.recordChangeTag ?? null;
  let dirty = false;
  let stopLive = () => {};
  const rerender = () => {
    stopLive();
    return context.isCurrent() ? renderRecord(view, {scope, ownerName, zoneName, recordName}, context) : undefined;
  };

  // Name, type and parent: set when the record is made; the parent can change.
  const nameInput = h("input", {type: "text", name: "recordName", required: true, value: isNew ? `${(record.recordType || "record").toLowerCase()}-${Date.now().toString(36)}` : record.recordName, readOnly: !isNew, autocomplete: "off"});
  const typeInput = h("input", {type: "text", name: "recordType", required: true, value: record.recordType, readOnly: !isNew, list: "record-types", autocomplete: "off"});
  const parentInput = h("input", {type: "text", name: "parent", value: record.parent ?? "", disabled: readOnly, autocomplete: "off"});

  // One row a field: label with its type, the editor, Remove.
  const rows = [];
  const fieldList = h("div", {class: "fields", id: "fields"});
  function addRow(name, type, value) {
    const id = `value-${++counter}`;
    const control = editor(name, type, value, {id, disabled: readOnly, context: {recordLink: linkTo}});
    const row = {name, type, control, removed: false};
    const remove = h("button", {type: "button", class: "small", hidden: readOnly, "aria-label": `Remove the field ${name}`}, "Remove");
    const element = h("div", {class: "field", dataset: {field: name}},
      h("label", {for: id}, name, " ", h("span", {class: "type"}, type)),
      h("div", {class: "value"}, control.element),
      remove);
    remove.addEventListener("click", () => { row.removed = true; element.remove(); dirty = true; announce(`${name} will be removed when you save`); });
    row.element = element;
    rows.push(row);
    fieldList.append(element);
  }
  const declared = types(record.recordType);
  for (const [name, value] of Object.entries(record.fields).sort(([a], [b]) => a.localeCompare(b))) addRow(name, declared[name] ?? typeOf(value), value);
  if (!readOnly) {
    for (const [name, type] of Object.entries(declared)) if (!(name in record.fields)) addRow(name, type, null);
  }

  // Adding a field: a name and a type (the record type's declared type when it has one).
  const newName = h("input", {type: "text", name: "newField", autocomplete: "off", pattern: "[A-Za-z][A-Za-z0-9_]*"});
  const newType = h("select", {name: "newType", "aria-label": "Type of the new field"}, FIELD_TYPES.map((type) => h("option", {value: type}, type)));
  const addField = h("div", {class: "inline-form", hidden: readOnly, id: "add-field"},
    labelled("New field", newName), newType,
    h("button", {type: "button", onclick: () => {
      const name = newName.value.trim();
      if (!/^[A-Za-z][A-Za-z0-9_]{0,254}$/.test(name)) { replace(feedback, message("error", "A field name starts with a letter, then letters, digits or _.")); newName.focus(); return; }
      if (rows.some((row) => row.name === name && !row.removed)) { replace(feedback, message("error", `The record already has a field ${name}.`)); return; }
      addRow(name, types(typeInput.value)[name] ?? newType.value, null);
      newName.value = "";
      dirty = true;
      rows.at(-1).control.focusable?.focus() ?? rows.at(-1).control.element.focus?.();
    }}, "Add field"));

  const save = h("button", {type: "submit", class: "primary", id: "save-record", hidden: readOnly}, isNew ? "Create record" : "Save");
  const remove = h("button", {type: "button", class: "danger", id: "delete-record", hidden: readOnly || isNew}, "Delete record…");
  // The owner shares a record (and the records under it) of a zone that is
  // not shared whole; a participant sees the share of a record it roots.
  const sharable = scope === "PRIVATE" ? !access.share : Boolean(record.share);
  const share = h("button", {type: "button", id: "share-record", hidden: isNew || !sharable},
    record.share ? "Sharing…" : "Share record…");
  share.addEventListener("click", () => openSharingSheet({scope, zone, rootRecordName: record.recordName, me: context.me, onChange: () => {}}));

  // A record moves only where the person may write, and not from the public database.
  const move = h("button", {type: "button", id: "move-record", hidden: readOnly || isNew || access.isPublic || Boolean(record.share)}, "Move to…");
  move.addEventListener("click", () => openMoveDialog({zone, record, me: context.me}));

  const form = h("form", {class: "record", id: "record-form", "aria-describedby": readOnly ? "read-only-note" : null},
    h("div", {class: "grid"}, labelled("Record name", nameInput), labelled("Record type", typeInput), labelled("Parent", parentInput, "The recordName of its parent in this zone, or empty.")),
    h("datalist", {id: "record-types"}, schema.map((type) => h("option", {value: type.name}))),
    h("h2", {}, "Fields"),
    fieldList,
    addField,
    h("div", {class: "toolbar"}, save, share, move, remove));
  form.addEventListener("input", () => { dirty = true; });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await saveRecord(changeTag);
  });

  async function saveRecord(tag) {
    replace(feedback);
    const fields = {};
    const problems = [];
    for (const row of rows) {
      if (row.removed) continue;
      try { fields[row.name] = row.control.read(); } catch (error) {
        if (!(error instanceof FieldError)) throw error;
        // An empty field that was never set is left out, not an error.
        if (!(row.name in record.fields) && isBlank(row)) continue;
        problems.push(error.message);
      }
    }
    if (!nameInput.value.trim() || !typeInput.value.trim()) problems.unshift("A record needs a name and a type.");
    if (problems.length) {
      replace(feedback, message("error", "Not saved:", h("ul", {}, problems.map((problem) => h("li", {}, problem)))));
      return;
    }
    const input = {recordName: nameInput.value.trim(), recordType: typeInput.value.trim(), fields};
    if (tag) input.recordChangeTag = tag;
    if (parentInput.value.trim()) input.parent = parentInput.value.trim();
    save.disabled = true;
    try {
      // The fields are in the API's form (the editors'), which a save takes as it is.
      const modifyRecords = await database(scope).modify(zone, {save: [input]});
      const failure = modifyRecords.errors[0];
      if (failure?.code === "SERVER_RECORD_CHANGED" && failure.serverRecord) return conflict(formRecord(failure.serverRecord), fields);
      if (failure) {
        replace(feedback, message("error", failure.code === "PERMISSION_FAILURE" ? `Not saved: you can view this record but not change it (${failure.message}).` : `Not saved: ${failure.message}`));
        return;
      }
      dirty = false;
      announce("Saved");
      if (isNew) { location.hash = linkTo(input.recordName); return; }
      changeTag = modifyRecords.saved[0].recordChangeTag;
      await rerender();
      const banner = document.getElementById("record-feedback");
      if (banner) replace(banner, message("notice", "Saved."));
    } catch (error) {
      replace(feedback, message("error", describe(error)));
    } finally {
      save.disabled = false;
    }
  }

  // Someone saved first: show their version beside ours, and let the
  // person choose (as a CloudKit app resolves CKError.serverRecordChanged).
  function conflict(server, mine) {
    const keys = [...new Set([...Object.keys(server.fields), ...Object.keys(mine)])]
      .filter((key) => JSON.stringify(server.fields[key]) !== JSON.stringify(mine[key]));
    const keepMine = h("button", {type: "button", class: "primary", id: "keep-mine"}, "Save mine over theirs");
    keepMine.addEventListener("click", () => saveRecord(server.recordChangeTag));
    const takeTheirs = h("button", {type: "button", id: "take-theirs"}, "Discard mine, show theirs");
    takeTheirs.addEventListener("click", rerender);
    replace(feedback, h("div", {class: "message conflict", role: "alert", id: "conflict"},
      h("p", {}, h("strong", {}, "Conflict: "), `this record was changed elsewhere (${formatDate(server.modified.timestamp)}) after you opened it. Your changes are not saved.`),
      keys.length ? h("table", {},
        h("thead", {}, h("tr", {}, h("th", {scope: "col"}, "Field"), h("th", {scope: "col"}, "Theirs (saved)"), h("th", {scope: "col"}, "Yours"))),
        h("tbody", {}, keys.map((key) => h("tr", {},
          h("th", {scope: "row"}, key),
          h("td", {}, key in server.fields ? display(server.fields[key], null, {recordLink: linkTo}) : "—"),
          h("td", {}, key in mine ? display(mine[key], null, {recordLink: linkTo}) : "—"))))) : null,
      h("div", {class: "toolbar"}, keepMine, takeTheirs)));
    keepMine.focus();
  }

  remove.addEventListener("click", async () => {
    if (!confirm(`Delete the record ${record.recordName}?`)) return;
    try {
      const modifyRecords = await database(scope).modify(zone, {delete: [record.recordName]});
      if (modifyRecords.errors[0]) { replace(feedback, message("error", `Not deleted: ${modifyRecords.errors[0].message}`)); return; }
      location.hash = zoneLink;
    } catch (error) {
      replace(feedback, message("error", describe(error)));
    }
  });

  const stamps = isNew ? null : h("p", {class: "muted"},
    `Created ${formatDate(record.created.timestamp)}${who(record.created.userRecordName)} · modified ${formatDate(record.modified.timestamp)}${who(record.modified.userRecordName)}`);
  function who(userRecordName) {
    return userRecordName === context.me?.userRecordName ? " by you" : "";
  }
  replace(view,
    h("nav", {class: "crumbs", "aria-label": "Breadcrumb"}, h("a", {href: "#/"}, context.me ? "Zones" : "Sign in"), " › ", h("a", {href: zoneLink}, access.isPublic ? "Public" : zoneName), " › ", isNew ? "New record" : record.recordName),
    h("h1", {}, isNew ? "New record" : record.recordName, record.share ? h("span", {class: "badge"}, "shared") : null),
    readOnly ? h("p", {class: "access", id: "read-only-note"}, !access.isPublic ? "Read only: this was shared with you to view. You cannot change it."
      : context.me ? `Read only: the grants of ${record.recordType} do not let you change this record.` : "Read only: sign in to change records.") : null,
    !readOnly && scope === "SHARED" && access.rootRecordName && !isNew
      ? h("p", {class: "access"}, `Shared with you as part of ${access.rootRecordName}: you can view and edit it.`) : null,
    stamps,
    feedback,
    form);

  if (isNew || !context.me) return;   // live changes need a token (a WebSocket)
  // Live: a change made elsewhere shows at once, unless the person is
  // editing; then they are told, and saving shows the conflict.
  stopLive = followChanges("zoneChanges", {scope, zone}, (change) => {
    const touched = change.expired || change.changed.some((item) => item.recordName === record.recordName) || change.deleted.some((item) => item.recordName === record.recordName);
    if (!touched) return;
    if (dirty) {
      replace(feedback, message("notice", "This record was just changed elsewhere. Saving will show you both versions."));
    } else {
      rerender();
      announce("The record was changed elsewhere and is shown as it is now");
    }
  }, (error) => {
    if (error.code === "ZONE_NOT_FOUND") replace(feedback, message("error", "This zone is no longer shared with you."));
  });
  context.setLeaving(() => stopLive());
}

function isBlank(row) {
  const element = row.control.element;
  const inputs = element.matches?.("input, textarea") ? [element] : [...element.querySelectorAll("input, textarea")];
  return inputs.every((input) => input.type === "checkbox" ? !input.checked : input.type === "file" ? true : input.value === "");
}
