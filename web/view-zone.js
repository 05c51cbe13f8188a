// A zone's records: one record type at a time, in pages (keyset cursors),
// filtered with the predicate language (docs/API.md §5) and sorted; kept
// current by the zone's change feed. Also the zone's sharing and its
// deletion (the owner) or leaving it (a participant). The public
// database's zone the same way, its type's grants deciding what may be
// added (signed out: read only, no live feed).

import {h, labelled, message, replace, announce, formatDate} from "./dom.js";
import {container, database, describe, followChanges, formRecord} from "./canopy.js";
import {display} from "./fields.js";
import {recordRoute, newRecordRoute, zoneRoute} from "./routes.js";
import {accessTo, openSharingSheet} from "./sharing.js";
import {publicAccessOf, describeAccess} from "./public.js";

const PAGE = 25;


export async function renderZone(view, {scope, ownerName, zoneName, params}, context) {
  const zone = {zoneName, ownerName};
  document.title = `${zoneName} · Canopy`;
  const feedback = h("div", {class: "feedback"});
  replace(view, h("p", {}, "Loading…"));

  const isPublic = scope === "PUBLIC";
  const signedIn = Boolean(context.me);
  let access, schema, present;
  try {
    [access, schema, present] = await Promise.all([
      accessTo(scope, zone),
      // Signed out there is no schema to read: types come from the feed.
      signedIn ? container.recordTypes() : [],
      database(scope).zoneChanges(zone, {limit: 50, desiredKeys: []}).then((page) => [...new Set(page.changed.map((record) => record.recordType))]),
    ]);
  } catch (error) {
    if (!context.isCurrent()) return;
    replace(view, h("h1", {}, zoneName), message("error", describe(error)), h("p", {}, h("a", {href: "#/"}, "Back to your zones")));
    return;
  }
  if (!context.isCurrent()) return;
  if (isPublic) document.title = "Public · Canopy";
  const types = [...new Set([...present, ...schema.map((type) => type.name)])];
  const recordType = params.get("type") || present[0] || types[0] || "";
  const fieldsOf = (type) => schema.find((candidate) => candidate.name === type)?.fields ?? [];
  if (isPublic) access = {...access, canWrite: publicAccessOf(schema, recordType, context.me).create};

  // The query form: record type, filter, sort.
  const typeInput = h("input", {type: "text", name: "recordType", value: recordType, list: "record-types", required: true, autocomplete: "off"});
  const typeList = h("datalist", {id: "record-types"}, types.map((type) => h("option", {value: type})));
  const filterInput = h("input", {type: "text", name: "filter", value: params.get("filter") ?? "", placeholder: "e.g. name BEGINSWITH 'A' AND done == FALSE", autocomplete: "off", spellcheck: "false"});
  const [sortField = "", sortDirection = "ASC"] = (params.get("sort") ?? "").split(":");
  const sortInput = h("select", {name: "sort"},
    h("option", {value: ""}, "record name"),
    ["modificationDate", "creationDate", ...fieldsOf(recordType).filter((field) => !field.type.startsWith("LIST<") && !["LOCATION", "BYTES", "ASSET", "REFERENCE"].includes(field.type)).map((field) => field.name)]
      .map((name) => h("option", {value: name, selected: name === sortField}, name)));
  const directionInput = h("select", {name: "direction", "aria-label": "Sort direction"},
    h("option", {value: "ASC", selected: sortDirection !== "DESC"}, "ascending"),
    h("option", {value: "DESC", selected: sortDirection === "DESC"}, "descending"));
  const query = h("form", {class: "query", id: "record-query"},
    labelled("Record type", typeInput), typeList,
    labelled("Filter", filterInput, "The predicate language of CKQuery: ==, !=, <, BEGINSWITH, IN, CONTAINS, AND, OR, NOT."),
    h("div", {class: "control"}, h("label", {for: "sort-field"}, "Sort by"), h("span", {class: "pair"}, Object.assign(sortInput, {id: "sort-field"}), directionInput)),
    h("button", {type: "submit"}, "Show"));
  query.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    next.set("type", typeInput.value.trim());
    if (filterInput.value.trim()) next.set("filter", filterInput.value.trim());
    if (sortInput.value) next.set("sort", `${sortInput.value}:${directionInput.value}`);
    const target = `${zoneRoute(scope, ownerName, zoneName)}?${next}`;
    if (location.hash === target) { page = 0; cursors.length = 1; load(); } else location.hash = target;
  });
  // What the pages show is the query in the address (the one applied), not
  // what is being typed in the form.
  const applied = {
    filter: (params.get("filter") ?? "").trim() || null,
    sort: sortField ? [{field: sortField, direction: sortDirection === "DESC" ? "DESC" : "ASC"}] : null,
  };

  // The toolbar: sharing, a new record, deleting or leaving the zone.
  const owner = scope === "PRIVATE";
  const shareButton = h("button", {type: "button", id: "share-zone", disabled: zoneName === "_defaultZone",
    hidden: isPublic || (!owner && !access.share)},   // shared record by record: each root record's page has its sheet
    owner ? (access.share ? "Sharing…" : "Share zone…") : "Sharing…");
  shareButton.addEventListener("click", () => openSharingSheet({scope, zone, rootRecordName: access.share?.rootRecordName ?? null, me: context.me, onChange: () => {}}));
  const newButton = h("a", {class: "button", id: "new-record", href: newRecordRoute(scope, ownerName, zoneName, recordType),
    "aria-disabled": access.canWrite === false ? "true" : null, onclick: (event) => { if (access.canWrite === false) event.preventDefault(); },
    title: isPublic && access.canWrite === false ? (signedIn ? `The grants of ${recordType} do not let you create one` : "Sign in to add records") : null}, "New record");
  const removeButton = h("button", {type: "button", class: "danger", id: owner ? "delete-zone" : "leave-zone", hidden: isPublic || zoneName === "_defaultZone"},
    owner ? "Delete zone…" : "Leave share…");
  removeButton.addEventListener("click", async () => {
    const question = owner ? `Delete the zone ${zoneName} and every record in it? This cannot be undone.` : `Leave ${zoneName}? You will need a new invitation to see it again.`;
    if (!confirm(question)) return;
    try {
      await database(scope).deleteZone(zone);
      location.hash = "#/";
    } catch (error) {
      replace(feedback, message("error", describe(error)));
    }
  });

  const sharer = access.ownerDisplayName ?? ownerName;
  const accessNote = owner ? null : isPublic
    ? h("p", {class: "access", id: "access-note"}, recordType ? describeAccess(recordType, publicAccessOf(schema, recordType, context.me), context.me) : "The public database: records everyone may read.")
    : h("p", {class: "access", id: "access-note"},
    access.canWrite === null ? `Records shared with you by ${sharer}, one hierarchy at a time: each shared record's page says what you may change.`
      : access.canWrite ? `Shared with you by ${sharer}: you can view and edit.`
        : `Shared with you by ${sharer}: read only. You can view these records but not change them.`);

  const table = h("div", {class: "records"});
  const pager = h("nav", {class: "pager", "aria-label": "Pages"});
  replace(view,
    h("nav", {class: "crumbs", "aria-label": "Breadcrumb"}, h("a", {href: "#/"}, signedIn ? "Zones" : "Sign in"), " › ", isPublic ? "Public" : zoneName),
    h("h1", {}, isPublic ? "Public database" : access.share?.title ?? zoneName,
      owner || isPublic || access.canWrite === null ? null : h("span", {class: "badge"}, access.canWrite ? "can edit" : "read only")),
    accessNote,
    h("div", {class: "toolbar"}, shareButton, newButton, removeButton),
    feedback,
    query,
    table,
    pager);

  const cursors = [null];   // cursors[i]: where page i starts
  let page = 0;
  let asked = 0;   // the latest request: an answer to an older one is dropped
  async function load() {
    if (!recordType) {
      replace(table, h("p", {class: "empty"}, "No records yet. Name a record type above, then make a record."));
      return;
    }
    const mine = ++asked;
    pager.querySelectorAll("button").forEach((button) => { button.disabled = true; });
    try {
      // One page of the query from this page's cursor (CanopyJS's keyset pages).
      const pages = database(scope).query(zone, {recordType, filter: applied.filter, sort: applied.sort ?? undefined, pageSize: PAGE, cursor: cursors[page]}).pages();
      const first = (await pages.next()).value ?? {records: [], cursor: null};
      await pages.return?.();
      const records = {records: first.records.map(formRecord), cursor: first.cursor};
      if (mine !== asked) return;
      replace(feedback);
      filterInput.removeAttribute("aria-invalid");
      drawTable(records.records);
      cursors[page + 1] = records.cursor;
      drawPager(records.cursor);
    } catch (error) {
      if (mine !== asked) return;
      if (error.code === "INVALID_ARGUMENTS" && applied.filter) filterInput.setAttribute("aria-invalid", "true");
      replace(feedback, message("error", describe(error)));
      drawPager(null);
      if (error.code === "ZONE_NOT_FOUND") gone();
    }
  }

  function drawTable(records) {
    const declared = fieldsOf(recordType).map((field) => field.name);
    const seen = [...new Set(records.flatMap((record) => Object.keys(record.fields)))];
    const columns = [...new Set([...declared, ...seen])].slice(0, 4);
    const types = Object.fromEntries(fieldsOf(recordType).map((field) => [field.name, field.type]));
    const linkTo = (name) => recordRoute(scope, ownerName, zoneName, name);
    if (records.length === 0) {
      replace(table, h("p", {class: "empty"}, page === 0 ? `No ${recordType} records${applied.filter ? " match the filter" : " in this zone"}.` : "No more records."));
      return;
    }
    replace(table, h("table", {id: "records-table"},
      h("caption", {class: "visually-hidden"}, `${recordType} records, page ${page + 1}`),
      h("thead", {}, h("tr", {}, h("th", {scope: "col"}, "Record"), columns.map((name) => h("th", {scope: "col"}, name)), h("th", {scope: "col"}, "Modified"))),
      h("tbody", {}, records.map((record) => h("tr", {dataset: {record: record.recordName}},
        h("th", {scope: "row"}, h("a", {href: linkTo(record.recordName)}, record.recordName), record.share ? h("span", {class: "badge"}, "shared") : null),
        columns.map((name) => h("td", {"data-label": name}, record.fields[name] === undefined ? "" : display(record.fields[name], types[name], {recordLink: linkTo}))),
        h("td", {"data-label": "Modified"}, formatDate(record.modified.timestamp)))))));
  }

  function drawPager(cursor) {
    replace(pager,
      h("button", {type: "button", disabled: page === 0, onclick: () => { page -= 1; load(); }}, "Previous page"),
      h("span", {class: "muted"}, `Page ${page + 1}`),
      h("button", {type: "button", id: "next-page", disabled: !cursor, onclick: () => { page += 1; load(); }}, "Next page"));
  }

  function gone() {
    replace(view, h("h1", {}, zoneName), message("error", "This zone does not exist or is no longer shared with you."),
      h("p", {}, h("a", {href: "#/"}, "Back to your zones")));
  }

  await load();
  if (!signedIn) return;   // live changes come over a WebSocket, which needs a token
  const stop = followChanges("zoneChanges", {scope, zone}, () => {
    load();
    announce("Records updated");
  }, (error) => {
    if (error.code === "ZONE_NOT_FOUND") gone();
  });
  context.setLeaving(stop);
}
