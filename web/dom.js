// Small DOM helpers: build elements node by node (nothing a user typed
// is ever parsed as HTML), and tell screen readers what just happened.

const properties = new Set(["value", "checked", "disabled", "hidden", "selected", "readOnly", "required", "open", "multiple"]);

/** h("button", {class: "primary", onclick}, "Save") */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") element.addEventListener(key.slice(2), value);
    else if (key === "class") element.className = value;
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (properties.has(key)) element[key] = value;
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

export function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** Replaces an element's children. */
export function replace(element, ...children) {
  element.replaceChildren();
  return append(element, children);
}

/** Says `text` in the page's polite live region (and shows it briefly). */
export function announce(text) {
  const region = document.getElementById("announcer");
  if (!region) return;
  region.textContent = "";
  requestAnimationFrame(() => { region.textContent = text; });
}

/** A labelled form control: <label for=id>text</label> then the control. */
let counter = 0;
export function labelled(text, control, hint) {
  if (!control.id) control.id = `field-${++counter}`;
  const parts = [h("label", {for: control.id}, text), control];
  if (hint) {
    const hintElement = h("p", {class: "hint", id: `${control.id}-hint`}, hint);
    control.setAttribute("aria-describedby", hintElement.id);
    parts.push(hintElement);
  }
  return h("div", {class: "control"}, parts);
}

/** A message box for an error or a notice; role=alert for errors. */
export function message(kind, ...children) {
  return h("div", {class: `message ${kind}`, role: kind === "error" ? "alert" : "status"}, children);
}

export function formatDate(milliseconds) {
  return new Date(milliseconds).toLocaleString(undefined, {dateStyle: "medium", timeStyle: "short"});
}

export function formatBytes(count) {
  if (count < 1024) return `${count} bytes`;
  if (count < 1024 * 1024) return `${(count / 1024).toFixed(1)} KB`;
  return `${(count / 1024 / 1024).toFixed(1)} MB`;
}
