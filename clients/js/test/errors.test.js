// How an answer becomes a CanopyError: the fields the gateway's errors carry
// (issue 53: outcomeUnknown on a write whose COMMIT went unanswered; the
// gateway's side is NetworkFaultTests).

import assert from "node:assert/strict";
import {test} from "node:test";
import {ErrorCode, errorFromResponse} from "../errors.js";

const headers = (values) => ({get: (name) => values[name.toLowerCase()] ?? null});

test("a 503 whose write's COMMIT was sent says so (outcomeUnknown), is retryable, and keeps Retry-After", () => {
  const error = errorFromResponse(503, {errors: [{message: "the database stopped answering after this write's COMMIT was sent",
    extensions: {code: "SERVICE_UNAVAILABLE", requestId: "r1", outcomeUnknown: true}}]}, headers({"retry-after": "1"}));
  assert.equal(error.code, ErrorCode.SERVICE_UNAVAILABLE);
  assert.equal(error.outcomeUnknown, true);
  assert.equal(error.isRetryable, true);
  assert.equal(error.retryAfter, 1);
});

test("any other error's outcome is known: outcomeUnknown is false", () => {
  const unavailable = errorFromResponse(503, {errors: [{message: "the database is unavailable", extensions: {code: "SERVICE_UNAVAILABLE"}}]}, headers({}));
  assert.equal(unavailable.outcomeUnknown, false);
  const bare = errorFromResponse(503, null, headers({}));
  assert.equal(bare.outcomeUnknown, false);
});

test("a 413 that says QUOTA_EXCEEDED is a full storage, not retryable; a bare 413 is a body too large (LIMIT_EXCEEDED)", () => {
  const full = errorFromResponse(413, {errors: [{message: "your storage is full: the upload needs 2500 bytes, and 2000 of your quota of 5000 bytes are free; nothing was kept",
    extensions: {code: "QUOTA_EXCEEDED", requestId: "r2"}}]}, headers({}));
  assert.equal(full.code, ErrorCode.QUOTA_EXCEEDED);
  assert.equal(full.status, 413);
  assert.equal(full.isRetryable, false);
  const large = errorFromResponse(413, null, headers({}));
  assert.equal(large.code, ErrorCode.LIMIT_EXCEEDED);
});
