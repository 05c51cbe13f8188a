// The console's routes, in the URL's fragment (never a token).

export function parseRoute(hash) {
  const [path, query = ""] = hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return {parts, params: new URLSearchParams(query)};
}

export function zoneRoute(scope, ownerName, zoneName) {
  return `#/zone/${scope}/${encodeURIComponent(ownerName)}/${encodeURIComponent(zoneName)}`;
}

export function recordRoute(scope, ownerName, zoneName, recordName) {
  return `#/record/${scope}/${encodeURIComponent(ownerName)}/${encodeURIComponent(zoneName)}/${encodeURIComponent(recordName)}`;
}

export function newRecordRoute(scope, ownerName, zoneName, recordType) {
  return `#/new/${scope}/${encodeURIComponent(ownerName)}/${encodeURIComponent(zoneName)}?type=${encodeURIComponent(recordType ?? "")}`;
}
