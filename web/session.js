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
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}

/** Where to go after signing in (a path of this site only). */
export function setNext(path) {
  if (typeof path === "string" && path.startsWith("/") && !path.startsWith("//")) sessionStorage.setItem(NEXT, path);
}

export function takeNext() {
  const next = sessionStorage.getItem(NEXT);
  sessionStorage.removeItem(NEXT);
  return next;
}
