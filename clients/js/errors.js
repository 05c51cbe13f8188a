// One error type for everything the client throws: the server's codes
// (docs/API.md §6), the HTTP status, and Retry-After. Every answer is mapped to
// it here, in one place (errorFromResponse, errorFromGraphQL).

/** The server's codes (docs/API.md §6) and the client's own. */
export const ErrorCode = Object.freeze({
  BAD_REQUEST: "BAD_REQUEST",
  NOT_AUTHENTICATED: "NOT_AUTHENTICATED",
  INVALID_ARGUMENTS: "INVALID_ARGUMENTS",
  PERMISSION_FAILURE: "PERMISSION_FAILURE",
  ZONE_NOT_FOUND: "ZONE_NOT_FOUND",
  UNKNOWN_ITEM: "UNKNOWN_ITEM",
  SERVER_RECORD_CHANGED: "SERVER_RECORD_CHANGED",
  BATCH_REQUEST_FAILED: "BATCH_REQUEST_FAILED",
  REFERENCE_VIOLATION: "REFERENCE_VIOLATION",
  ALREADY_SHARED: "ALREADY_SHARED",
  CHANGE_TOKEN_EXPIRED: "CHANGE_TOKEN_EXPIRED",
  LIMIT_EXCEEDED: "LIMIT_EXCEEDED",
  SERVICE_UNAVAILABLE: "SERVICE_UNAVAILABLE",
  INTERNAL_ERROR: "INTERNAL_ERROR",
  /** The storage the change is charged to is full (yours, or a shared zone's owner's); HTTP 413 on an upload. Not retryable. */
  QUOTA_EXCEEDED: "QUOTA_EXCEEDED",
  /** HTTP 429: the server sends LIMIT_EXCEEDED; a rate limit means "wait", a size limit "split". */
  REQUEST_RATE_LIMITED: "REQUEST_RATE_LIMITED",
  /** The server could not be reached, or the connection dropped. */
  NETWORK_FAILURE: "NETWORK_FAILURE",
  /** Not the server: this client cannot do it as set up here (no WebSocket class for live changes, say). Not retryable; the message says what to pass. */
  CONFIGURATION_ERROR: "CONFIGURATION_ERROR",
});

const retryable = new Set([ErrorCode.SERVICE_UNAVAILABLE, ErrorCode.REQUEST_RATE_LIMITED, ErrorCode.NETWORK_FAILURE]);

/**
 * What went wrong, with the server's code. `retryAfter` is the server's
 * Retry-After in seconds (or undefined); `serverRecord` is set on
 * SERVER_RECORD_CHANGED; `recordName` on a per-record error;
 * `outcomeUnknown` is true on a SERVICE_UNAVAILABLE whose write's COMMIT had
 * been sent when the database stopped answering: it may or may not have
 * been saved (send it again; a save with the old change tag is then a
 * SERVER_RECORD_CHANGED if it was).
 */
export class CanopyError extends Error {
  constructor(code, message, {status, retryAfter, recordName, serverRecord, outcomeUnknown = false, cause} = {}) {
    super(message, cause === undefined ? undefined : {cause});
    this.name = "CanopyError";
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
    this.recordName = recordName;
    this.serverRecord = serverRecord;
    this.outcomeUnknown = outcomeUnknown;
  }

  /** True for errors that may succeed if the same request is sent again later. */
  get isRetryable() {
    return retryable.has(this.code);
  }
}

/** Retry-After in seconds (delta-seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(headers) {
  const value = headers?.get?.("retry-after");
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

/** The error of a GraphQL error object (`{message, extensions: {code}}`). */
export function errorFromGraphQL(error, {status, retryAfter, decodeRecord} = {}) {
  let code = error?.extensions?.code ?? error?.code ?? ErrorCode.INTERNAL_ERROR;
  if (status === 429) code = ErrorCode.REQUEST_RATE_LIMITED;
  const serverRecord = error?.serverRecord && decodeRecord ? decodeRecord(error.serverRecord) : undefined;
  return new CanopyError(code, error?.message ?? `The server answered HTTP ${status}.`, {
    status, retryAfter, recordName: error?.recordName, serverRecord, outcomeUnknown: error?.extensions?.outcomeUnknown === true,
  });
}

/** The error of an HTTP answer that is not a success, from its status and body (if any). */
export function errorFromResponse(status, body, headers) {
  const retryAfter = retryAfterSeconds(headers);
  const first = body?.errors?.[0];
  if (first) return errorFromGraphQL(first, {status, retryAfter});
  const code = status === 401 ? ErrorCode.NOT_AUTHENTICATED
    : status === 403 ? ErrorCode.PERMISSION_FAILURE
    : status === 413 ? ErrorCode.LIMIT_EXCEEDED
    : status === 429 ? ErrorCode.REQUEST_RATE_LIMITED
    : status === 503 ? ErrorCode.SERVICE_UNAVAILABLE
    : status >= 400 && status < 500 ? ErrorCode.BAD_REQUEST
    : ErrorCode.INTERNAL_ERROR;
  return new CanopyError(code, `The server answered HTTP ${status}.`, {status, retryAfter});
}
