// The .d.ts files against the modules they describe, without a TypeScript
// compiler: every module has its declarations; each declares exactly the
// names its module exports (values as values, types only where no value
// is); each exported class declares every public method, getter and static
// member it has at run time and nothing it lacks; and the type imports
// between declarations name what the other file exports. A small parser
// of declaration text, enough for the forms these files use.

import assert from "node:assert/strict";
import {readdirSync, readFileSync} from "node:fs";
import {join} from "node:path";
import {test} from "node:test";
import {fileURLToPath, pathToFileURL} from "node:url";

const directory = fileURLToPath(new URL("..", import.meta.url));

/**
 * Methods and getters the classes have at run time that are not API: the
 * steps of a public method, or what one module calls on another's object.
 * They are left out of the declarations so that editors do not offer them.
 * Each must exist at run time and must not be declared.
 */
const internalMembers = {
  Database: ["gql", "requireScope", "transport"],
  LiveConnection: ["end", "open", "receive", "closed", "send", "failAll", "setConnected"],
  IndexedDBStorage: ["open"],
  Auth: ["emit", "signInWithPopup", "finish", "exchange", "call", "trade", "refreshOnce", "revoke", "end", "read", "store"],
  SyncedDatabase: ["authChanged", "signedInNow", "recordToSave", "handleEvent", "take", "underEdits", "refused", "refetch", "persist", "takeWrite", "key",
    "zoneEntry", "dropZone", "forgetEdits", "report", "changed"],
  SyncEngine: ["queueRecord", "changed", "emit", "stateUpdate", "exclusive", "retrying", "fetchNow", "fetchZone",
    "sendNow", "sendZones", "sendBatch", "settle", "listen", "report", "canonicalKey", "recordKey", "canonicalRecord",
    "setReachable", "automaticSend", "scheduleResume", "syncNow", "watchSurroundings", "pendingAmong", "fetchZoneInRanges", "readRanges", "allSent", "settleWaiters",
    "zoneIDFromKey", "forgetZone", "delivered"],
};

const valueKinds = new Set(["class", "function", "const", "let", "var", "enum", "namespace"]);

// MARK: Reading declarations

/** The text with comments turned into spaces (offsets kept); strings are kept. */
function stripComments(text) {
  let out = "";
  for (let i = 0; i < text.length;) {
    const c = text[i];
    if (c === "/" && text[i + 1] === "/") {
      const end = text.indexOf("\n", i);
      const stop = end === -1 ? text.length : end;
      out += " ".repeat(stop - i);
      i = stop;
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end === -1 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
    } else if (c === "\"" || c === "'" || c === "`") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

/** The offset of the bracket closing the one at `open` (strings and comments already handled). */
function closing(text, open) {
  const pairs = {"{": "}", "(": ")", "[": "]"};
  const stack = [];
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "\"" || c === "'" || c === "`") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === "\\" ? 2 : 1;
      i = j;
    } else if (pairs[c]) {
      stack.push(pairs[c]);
    } else if (c === "}" || c === ")" || c === "]") {
      assert.equal(c, stack.pop(), `unbalanced ${c} at offset ${i}`);
      if (stack.length === 0) return i;
    }
  }
  throw new Error(`no bracket closes the one at offset ${open}`);
}

/** The text with what is inside top-level braces blanked out, so that regular expressions see only top-level statements. */
function topLevel(text) {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "{") {
      const end = closing(text, i);
      out += "{" + text.slice(i + 1, end).replace(/[^\n]/g, " ") + "}";
      i = end;
    } else {
      out += text[i];
    }
  }
  return out;
}

/** `a, type b, c as d` → [{name: "a", exported: "a", typeOnly}, …]. */
function specifiers(list, typeOnly) {
  return list.split(",").map((item) => item.trim()).filter(Boolean).map((item) => {
    const match = /^(type\s+)?([\w$]+)(?:\s+as\s+([\w$]+))?$/.exec(item);
    assert.ok(match, `cannot read the specifier "${item}"`);
    return {name: match[2], exported: match[3] ?? match[2], typeOnly: typeOnly || Boolean(match[1])};
  });
}

const parsed = new Map();

/**
 * One declaration file: its exports (name → "class", "function", "const",
 * …, "interface", "type"), its classes' bodies, and its imports.
 */
function declarations(file) {
  if (parsed.has(file)) return parsed.get(file);
  const text = stripComments(readFileSync(join(directory, file), "utf8"));
  const top = topLevel(text);
  const exports = new Map();
  const local = new Map();
  const classes = new Map();
  const imports = [];
  const result = {file, exports, classes, imports};
  parsed.set(file, result);

  const add = (name, kind) => {
    // A function's overloads and a declaration merged with a namespace repeat a name; a value wins over a type.
    if (!exports.has(name) || valueKinds.has(kind)) exports.set(name, kind);
  };
  const declaration = /(^|[;}\s])(export\s+)?(?:declare\s+)?(?:abstract\s+)?(class|function|const|let|var|enum|namespace|interface|type)\s+([\w$]+)/g;
  for (const match of top.matchAll(declaration)) {
    const [, , exported, kind, name] = match;
    if (exported) add(name, kind); else local.set(name, kind);
    if (kind === "class") {
      const open = top.indexOf("{", match.index + match[0].length);
      classes.set(name, text.slice(open + 1, closing(text, open)));
    }
  }
  assert.doesNotMatch(top, /\bexport\s+default\b/, `${file}: export default is not read by this test`);
  assert.doesNotMatch(top, /\bexport\s*=/, `${file}: export = is not read by this test`);

  const from = (offset) => /^\s*from\s*(["'])(.*?)\1/.exec(top.slice(offset));
  for (const match of top.matchAll(/\b(export|import)\s+(type\s+)?\{/g)) {
    const open = match.index + match[0].length - 1;
    const end = closing(text, open);
    const list = specifiers(text.slice(open + 1, end), Boolean(match[2]));
    const source = from(end + 1)?.[2];
    if (match[1] === "import") {
      assert.ok(source, `${file}: an import without from`);
      imports.push({source, names: list.map((item) => item.name)});
      continue;
    }
    for (const item of list) {
      let kind;
      if (source) {
        const target = declarations(declarationFile(file, source));
        kind = target.exports.get(item.name);
        assert.ok(kind, `${file} re-exports ${item.name}, which ${target.file} does not export`);
      } else {
        kind = local.get(item.name);
        assert.ok(kind, `${file} exports ${item.name}, which it does not declare`);
      }
      add(item.exported, item.typeOnly ? "type" : kind);
    }
  }
  for (const match of top.matchAll(/\bexport\s+\*\s+(?:as\s+([\w$]+)\s+)?from\s*(["'])(.*?)\2/g)) {
    const target = declarations(declarationFile(file, match[3]));
    if (match[1]) add(match[1], "namespace");
    else for (const [name, kind] of target.exports) add(name, kind);
  }
  return result;
}

/** The .d.ts that `source` ("./records.js") names, from `file`. */
function declarationFile(file, source) {
  const match = /^\.\/([\w-]+)\.js$/.exec(source);
  assert.ok(match, `${file}: import "${source}" is not a sibling module ("./name.js")`);
  return `${match[1]}.d.ts`;
}

/**
 * A class body's members, each ending with ";": [{name, isStatic, kind:
 * "method" | "accessor" | "property"}], constructors and private members
 * left out.
 */
function members(body) {
  const found = [];
  let start = 0;
  const finish = (end) => {
    const member = body.slice(start, end).trim();
    start = end + 1;
    if (!member) return;
    const match = /^((?:(?:static|readonly|public|private|protected|abstract|declare|override)\s+)*)(?:(get|set)\s+)?([\w$]+|\[[^\]]+\])\s*\??\s*([(<:])?/.exec(member);
    assert.ok(match, `cannot read the class member "${member.slice(0, 60)}"`);
    const [, modifiers, accessor, name, next] = match;
    if (name === "constructor" || /\b(private|protected)\b/.test(modifiers)) return;
    const kind = accessor ? "accessor" : next === "(" || next === "<" ? "method" : "property";
    found.push({name, isStatic: /\bstatic\b/.test(modifiers), kind});
  };
  const memberStart = /^[ \t]*(?:(?:static|readonly|public|private|protected|abstract|declare|override|get|set)\s+)*[\w$]+\s*\??\s*[(:<]/;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === "{" || c === "(" || c === "[") i = closing(body, i);
    else if (c === ";") finish(i);
    else if (c === "\n" && body.slice(start, i).trim() && memberStart.test(body.slice(i + 1))) {
      assert.fail(`a class member does not end with ";": "${body.slice(start, i).trim().slice(0, 60)}"`);
    }
  }
  finish(body.length);
  return found;
}

// MARK: Reading the modules

/** A class's own members at run time: [{name, isStatic, kind: "method" | "accessor"}]. */
function runtimeMembers(constructor) {
  const found = [];
  const read = (object, isStatic, skip) => {
    for (const name of Object.getOwnPropertyNames(object)) {
      if (skip.includes(name)) continue;
      const descriptor = Object.getOwnPropertyDescriptor(object, name);
      const kind = descriptor.get || descriptor.set ? "accessor" : typeof descriptor.value === "function" ? "method" : "property";
      found.push({name, isStatic, kind});
    }
  };
  read(constructor.prototype, false, ["constructor"]);
  read(constructor, true, ["length", "name", "prototype"]);
  return found;
}

const isClass = (value) => typeof value === "function" && /^class\b/.test(Function.prototype.toString.call(value));
const describe = ({name, isStatic}) => `${isStatic ? "static " : ""}${name}`;

// MARK: Tests

const modules = readdirSync(directory).filter((name) => name.endsWith(".js")).sort();
const declarationFiles = readdirSync(directory).filter((name) => name.endsWith(".d.ts")).sort();

test("every module has a .d.ts beside it, and every .d.ts a module", () => {
  assert.ok(modules.length > 0, `no modules in ${directory}`);
  assert.deepEqual(declarationFiles, modules.map((name) => name.replace(/\.js$/, ".d.ts")));
});

for (const module of modules) {
  const file = module.replace(/\.js$/, ".d.ts");

  test(`${file} declares exactly what ${module} exports`, async () => {
    const runtime = await import(pathToFileURL(join(directory, module)).href);
    const {exports} = declarations(file);
    const runtimeNames = Object.keys(runtime).sort();
    const declaredValues = [...exports].filter(([, kind]) => valueKinds.has(kind)).map(([name]) => name).sort();
    for (const name of runtimeNames) {
      assert.ok(exports.has(name), `${module} exports ${name}, which ${file} does not declare`);
      assert.ok(valueKinds.has(exports.get(name)), `${module} exports the value ${name}, which ${file} declares only as a ${exports.get(name)}`);
    }
    assert.deepEqual(declaredValues, runtimeNames, `${file} declares values ${module} does not export`);
    for (const name of runtimeNames) {
      const value = runtime[name], kind = exports.get(name);
      if (isClass(value)) assert.equal(kind, "class", `${module}'s ${name} is a class; ${file} declares a ${kind}`);
      else if (typeof value === "function") assert.ok(kind === "function" || kind === "const", `${module}'s ${name} is a function; ${file} declares a ${kind}`);
      else assert.ok(["const", "let", "var", "enum"].includes(kind), `${module}'s ${name} is not a function; ${file} declares a ${kind}`);
    }
    assert.ok(!exports.has("Record"), `${file} declares Record, which hides TypeScript's own`);
  });

  test(`${file} declares the public members of ${module}'s classes, and only those`, async () => {
    const runtime = await import(pathToFileURL(join(directory, module)).href);
    const {classes} = declarations(file);
    for (const [name, value] of Object.entries(runtime)) {
      if (!isClass(value)) continue;
      // Only classes declared here: a re-exported class is checked in its own file.
      if (!classes.has(name)) continue;
      const declared = members(classes.get(name));
      const internal = internalMembers[name] ?? [];
      const actual = runtimeMembers(value);
      const find = (list, member) => list.find((item) => item.name === member.name && item.isStatic === member.isStatic);
      for (const member of actual) {
        const declaration = find(declared, member);
        if (internal.includes(member.name) && !member.isStatic) {
          assert.equal(declaration, undefined, `${name}.${member.name} is listed as internal in this test but declared in ${file}`);
          continue;
        }
        assert.ok(declaration, `${name} has ${describe(member)} at run time, which ${file} does not declare (declare it, or list it in internalMembers)`);
        if (member.kind === "method") assert.equal(declaration.kind, "method", `${name}.${describe(member)} is a method; ${file} declares a ${declaration.kind}`);
        if (member.kind === "accessor") assert.notEqual(declaration.kind, "method", `${name}.${describe(member)} is a getter; ${file} declares a method`);
      }
      for (const member of declared) {
        if (member.kind === "property") continue;   // instance fields are set by the constructor: nothing on the prototype to check
        const real = find(actual, member);
        assert.ok(real, `${file} declares ${name}.${describe(member)}, which ${module}'s class does not have`);
        assert.equal(real.kind, member.kind, `${file} declares ${name}.${describe(member)} as a ${member.kind}; it is a ${real.kind}`);
      }
      for (const member of internal) {
        assert.ok(actual.some((item) => item.name === member), `internalMembers lists ${name}.${member}, which no longer exists`);
      }
    }
  });

  test(`${file} imports only what the other declarations export`, () => {
    for (const {source, names} of declarations(file).imports) {
      const target = declarations(declarationFile(file, source));
      for (const name of names) assert.ok(target.exports.has(name), `${file} imports ${name} from ${source}, whose .d.ts does not export it`);
    }
  });
}

test("ErrorCode declares the codes errors.js has", async () => {
  const {ErrorCode} = await import(pathToFileURL(join(directory, "errors.js")).href);
  const text = stripComments(readFileSync(join(directory, "errors.d.ts"), "utf8"));
  const start = text.search(/\bdeclare\s+const\s+ErrorCode\s*:\s*\{/);
  assert.ok(start >= 0, "errors.d.ts declares ErrorCode as an object type");
  const open = text.indexOf("{", start);
  const body = text.slice(open + 1, closing(text, open));
  const declared = Object.fromEntries([...body.matchAll(/readonly\s+([A-Z_]+)\s*:\s*"([A-Z_]+)"/g)].map((match) => [match[1], match[2]]));
  assert.deepEqual(declared, {...ErrorCode});
});
