// Who is signed in: the bearer token, kept in this tab's sessionStorage
// (or localStorage when the person asks to stay signed in), never in a URL,
// a cookie or a log. Two windows can be two people.

const KEY = "canopy.token";
const NEXT = "canopy.next";

export function currentToken() {
  return sessionStorage.getItem(KEY) ?? localStorage.getItem(KEY);
}

export function remember(token, keep) {
  signOut();
  (keep ? localStorage : sessionStorage).setItem(KEY, token);
}

export function signOut() {
  for (const storage of [sessionStorage, localStorage]) {
    storage.removeItem(KEY);
    storage.removeItem(ISSUED);
  }
}

/** Where to go after signing in (a path of this site only). */
export function setNext(path) {
  if (typeof path === "string" && path.startsWith("/") && !path.startsWith("//")) sessionStorage.setItem(NEXT, path);
}

export function takeNext() {
  const next = sessionStorage.getItem(NEXT);
  sessionStorage.removeItem(NEXT);
  if (!next) return null;
  // Only a page of this site: "/\\evil.example" would leave it.
  const url = new URL(next, location.origin);
  return url.origin === location.origin ? url.pathname + url.search + url.hash : null;
}

const ISSUED = "canopy.issued";

/** The console made this token (a provider sign-in): revoke it on sign-out. */
export function rememberIssued(prefix, keep) {
  (keep ? localStorage : sessionStorage).setItem(ISSUED, prefix);
}

/** The prefix of a token the console made, if the current one is. */
export function issuedPrefix() {
  return sessionStorage.getItem(ISSUED) ?? localStorage.getItem(ISSUED);
}
