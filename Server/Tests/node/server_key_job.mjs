// A server job signing Web Services requests as CloudKit JS 1.2 does with
// a server-to-server key (issue 66): ECDSA P-256 with SHA-256 over
// "<date>:<base64 SHA-256 of the body>:<path>", where the path is the one
// the request is sent to *with its query string* (?ckjsBuildVersion=…&
// ckjsVersion=…), the date ISO 8601 without milliseconds, the signature DER
// in base64. Written from that published behaviour, not from Apple's code.
//
// Usage: node server_key_job.mjs BASE CONTAINER KEY_ID PRIVATE_KEY_PEM
// Saves a record in the public database, queries it back, and prints one
// JSON line of what it saw, then "the server-to-server job passed".
import {createHash, createSign} from "node:crypto";
import {readFileSync} from "node:fs";

const [base, container, keyID, keyFile] = process.argv.slice(2);
const privateKey = readFileSync(keyFile, "utf8");
const query = "ckjsBuildVersion=2310ProjectDev27&ckjsVersion=1.2.0";

async function call(subpath, body) {
  const path = `/database/1/${container}/production/${subpath}?${query}`;
  const text = JSON.stringify(body);
  const date = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  const digest = createHash("sha256").update(text).digest("base64");
  const signature = createSign("sha256").update(`${date}:${digest}:${path}`).sign(privateKey, "base64");
  const response = await fetch(base + path, {
    method: "POST",
    headers: {
      "Content-Type": "text/plain",
      "X-Apple-CloudKit-Request-KeyID": keyID,
      "X-Apple-CloudKit-Request-ISO8601Date": date,
      "X-Apple-CloudKit-Request-SignatureV1": signature,
    },
    body: text,
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${subpath}: HTTP ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

function check(condition, what) {
  if (!condition) throw new Error(what);
}

const saved = await call("public/records/modify", {operations: [{operationType: "create",
  record: {recordType: "Notice", recordName: "from-a-job", fields: {text: {value: "hello from a job"}}}}]});
const record = saved.records[0];
check(record && !record.serverErrorCode && record.recordName === "from-a-job", `records/modify: ${JSON.stringify(saved)}`);
const read = await call("public/records/query", {zoneID: {zoneName: "_defaultZone"}, query: {recordType: "Notice",
  filterBy: [{fieldName: "text", comparator: "EQUALS", fieldValue: {value: "hello from a job"}}]}});
check(read.records.length === 1 && read.records[0].recordName === "from-a-job", `records/query: ${JSON.stringify(read)}`);
console.log(JSON.stringify({saved: record.recordName, creator: record.created.userRecordName, read: read.records.map((r) => r.recordName)}));
console.log("the server-to-server job passed");
