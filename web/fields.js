// Record fields by type (docs/API.md §4): how each type is shown, and a form
// control to edit it that reads back the JSON value to save.

import {h, formatBytes, formatDate} from "./dom.js";
import {parseJSON, stringifyJSON, upload} from "./canopy.js";

export const FIELD_TYPES = ["STRING", "INT64", "DOUBLE", "BOOLEAN", "TIMESTAMP", "REFERENCE", "LOCATION", "BYTES", "ASSET",
  "LIST<STRING>", "LIST<INT64>", "LIST<DOUBLE>", "LIST<TIMESTAMP>", "LIST<REFERENCE>", "LIST<ASSET>"];

const INLINE_IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]);

/** The type of a stored value, when the schema does not say. */
export function typeOf(value) {
  if (Array.isArray(value)) return value.length ? `LIST<${typeOf(value[0])}>` : "LIST<STRING>";
  if (typeof value === "string") return "STRING";
  if (typeof value === "boolean") return "BOOLEAN";
  if (typeof value === "number") return Number.isInteger(value) ? "INT64" : "DOUBLE";
  if (value && typeof value === "object" && typeof value.type === "string") return value.type;
  return "STRING";
}

/** A field's value for reading: dates as dates, references as links, assets as images or links. */
export function display(value, type, context) {
  type = type ?? typeOf(value);
  if (value === null || value === undefined) return h("span", {class: "empty"}, "—");
  if (type.startsWith("LIST<")) {
    const element = type.slice(5, -1);
    if (!Array.isArray(value) || value.length === 0) return h("span", {class: "empty"}, "empty list");
    return h("ul", {class: "list-value"}, value.map((item) => h("li", {}, display(item, element, context))));
  }
  switch (type) {
    case "BOOLEAN": return value ? "Yes" : "No";
    case "TIMESTAMP": {
      const time = new Date(value.value);
      return h("time", {datetime: time.toISOString()}, formatDate(value.value));
    }
    case "REFERENCE":
      return h("a", {href: context.recordLink(value.recordName)}, value.recordName,
        value.action === "DELETE_SELF" ? h("span", {class: "badge"}, "deleted with it") : null);
    case "LOCATION":
      return h("span", {class: "location"}, `${value.latitude.toFixed(5)}, ${value.longitude.toFixed(5)}`);
    case "BYTES": {
      const length = Math.floor((value.base64?.length ?? 0) * 3 / 4);
      return `${formatBytes(length)} of data`;
    }
    case "ASSET": {
      const label = `${value.contentType ?? "file"}, ${formatBytes(value.size ?? 0)}`;
      if (!value.downloadURL) return label;
      // Only raster pictures are shown inline (an SVG can carry script).
      if (INLINE_IMAGES.has((value.contentType ?? "").split(";")[0].trim().toLowerCase())) {
        return h("a", {href: value.downloadURL, class: "asset"}, h("img", {src: value.downloadURL, alt: `Image (${label})`, loading: "lazy"}));
      }
      return h("a", {href: value.downloadURL, class: "asset", download: ""}, `Download (${label})`);
    }
    default: return String(value);
  }
}

function localDateTime(milliseconds) {
  const date = new Date(milliseconds);
  const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60000);
  return shifted.toISOString().slice(0, 19);
}

class FieldError extends Error {}

/**
 * A control that edits one field: {element, read()} where read() answers
 * the JSON value to save or throws a FieldError saying what is wrong.
 * `id` labels the control; `disabled` shows it read-only.
 */
export function editor(name, type, value, {id, disabled, context}) {
  const common = {id, disabled, name};
  if (type.startsWith("LIST<")) {
    const element = type.slice(5, -1);
    if (element === "ASSET") return listOfAssets(value ?? [], common, context);
    const text = h("textarea", {...common, rows: 3, value: stringifyJSON(value ?? [])});
    return {element: text, read() {
      let parsed;
      try { parsed = parseJSON(text.value || "[]"); } catch { throw new FieldError(`${name}: write the list as JSON, e.g. ["a", "b"]`); }
      if (!Array.isArray(parsed)) throw new FieldError(`${name}: a list is written in [ ]`);
      return parsed;
    }};
  }
  switch (type) {
    case "STRING": {
      const long = typeof value === "string" && (value.length > 80 || value.includes("\n"));
      const input = long ? h("textarea", {...common, rows: 4, value: value ?? ""}) : h("input", {...common, type: "text", value: value ?? ""});
      return {element: input, read: () => input.value};
    }
    case "INT64":
    case "DOUBLE": {
      const input = h("input", {...common, type: "number", step: type === "INT64" ? "1" : "any", value: value ?? "", inputmode: "decimal"});
      return {element: input, read() {
        if (input.value.trim() === "") throw new FieldError(`${name}: enter a number`);
        const number = Number(input.value);
        if (!Number.isFinite(number) || (type === "INT64" && !Number.isInteger(number))) throw new FieldError(`${name}: ${type === "INT64" ? "a whole number" : "a number"} is needed`);
        return number;
      }};
    }
    case "BOOLEAN": {
      const input = h("input", {...common, type: "checkbox", checked: value === true});
      return {element: h("span", {class: "checkbox"}, input), read: () => input.checked, focusable: input};
    }
    case "TIMESTAMP": {
      const input = h("input", {...common, type: "datetime-local", step: "1", value: value ? localDateTime(value.value) : ""});
      return {element: input, read() {
        const time = new Date(input.value).getTime();
        if (!input.value || Number.isNaN(time)) throw new FieldError(`${name}: pick a date and time`);
        return {type: "TIMESTAMP", value: time};
      }};
    }
    case "REFERENCE": {
      const input = h("input", {...common, type: "text", value: value?.recordName ?? "", placeholder: "recordName"});
      const action = h("select", {disabled, "aria-label": `${name}: when that record is deleted`},
        h("option", {value: "NONE", selected: value?.action !== "DELETE_SELF"}, "keep this record"),
        h("option", {value: "DELETE_SELF", selected: value?.action === "DELETE_SELF"}, "delete this record too"));
      return {element: h("span", {class: "pair"}, input, action), read() {
        if (!input.value.trim()) throw new FieldError(`${name}: name the record it refers to`);
        return {type: "REFERENCE", recordName: input.value.trim(), action: action.value};
      }};
    }
    case "LOCATION": {
      const latitude = h("input", {...common, type: "number", step: "any", min: -90, max: 90, value: value?.latitude ?? "", "aria-label": `${name}: latitude`});
      const longitude = h("input", {type: "number", step: "any", min: -180, max: 180, disabled, value: value?.longitude ?? "", "aria-label": `${name}: longitude`});
      return {element: h("span", {class: "pair"}, latitude, longitude), read() {
        const lat = Number(latitude.value), lon = Number(longitude.value);
        if (latitude.value === "" || longitude.value === "" || Math.abs(lat) > 90 || Math.abs(lon) > 180) {
          throw new FieldError(`${name}: latitude −90…90 and longitude −180…180`);
        }
        // The other keys of the Location Dictionary (accuracy, altitude,
        // speed, course, timestamp) are kept when only the place is edited.
        return {...(value ?? {}), type: "LOCATION", latitude: lat, longitude: lon};
      }};
    }
    case "BYTES": {
      const text = h("textarea", {...common, rows: 2, value: value?.base64 ?? ""});
      return {element: text, read() {
        if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text.value.trim())) throw new FieldError(`${name}: bytes are written in base64`);
        return {type: "BYTES", base64: text.value.trim()};
      }};
    }
    case "ASSET": return singleAsset(value, common, context);
    default: {
      const text = h("textarea", {...common, rows: 2, value: JSON.stringify(value)});
      return {element: text, read: () => JSON.parse(text.value)};
    }
  }
}

// An asset: what it holds now, and a file picker that uploads at once and
// keeps the upload token for the save.
function singleAsset(value, common, context) {
  let current = value ?? null;
  const preview = h("span", {class: "asset-preview"}, current ? display(current, "ASSET", context) : "no file");
  const status = h("span", {class: "hint", role: "status"});
  const input = h("input", {...common, type: "file"});
  input.addEventListener("change", async () => {
    const file = input.files?.[0];
    if (!file) return;
    status.textContent = `Uploading ${file.name}…`;
    try {
      const uploaded = await upload(file);
      current = {type: "ASSET", uploadToken: uploaded.uploadToken};
      status.textContent = `${file.name} uploaded (${formatBytes(uploaded.size)}); save to attach it.`;
    } catch (error) {
      status.textContent = `${file.name} was not uploaded: ${error.message}`;
    }
  });
  return {element: h("span", {class: "asset-editor"}, preview, input, status), read() {
    if (!current) throw new FieldError(`${common.name}: choose a file`);
    return current;
  }, focusable: input};
}

function listOfAssets(values, common, context) {
  return {element: h("span", {class: "asset-editor"}, values.length ? display(values, "LIST<ASSET>", context) : "no files"),
    read: () => values};
}

export {FieldError};
