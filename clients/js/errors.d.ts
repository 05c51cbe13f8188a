// Types of errors.js: one error type for everything the client throws.

import type {CanopyRecord} from "./records.js";

/** The server's codes (docs/API.md §6) and the client's own. */
export declare const ErrorCode: {
  readonly BAD_REQUEST: "BAD_REQUEST";
  readonly NOT_AUTHENTICATED: "NOT_AUTHENTICATED";
  readonly INVALID_ARGUMENTS: "INVALID_ARGUMENTS";
  readonly PERMISSION_FAILURE: "PERMISSION_FAILURE";
  readonly ZONE_NOT_FOUND: "ZONE_NOT_FOUND";
  readonly UNKNOWN_ITEM: "UNKNOWN_ITEM";
  readonly SERVER_RECORD_CHANGED: "SERVER_RECORD_CHANGED";
  readonly BATCH_REQUEST_FAILED: "BATCH_REQUEST_FAILED";
  readonly REFERENCE_VIOLATION: "REFERENCE_VIOLATION";
  readonly ALREADY_SHARED: "ALREADY_SHARED";
  readonly CHANGE_TOKEN_EXPIRED: "CHANGE_TOKEN_EXPIRED";
  readonly LIMIT_EXCEEDED: "LIMIT_EXCEEDED";
  readonly SERVICE_UNAVAILABLE: "SERVICE_UNAVAILABLE";
  readonly INTERNAL_ERROR: "INTERNAL_ERROR";
  /** The storage the change is charged to is full (yours, or a shared zone's owner's); HTTP 413 on an upload. Not retryable. */
  readonly QUOTA_EXCEEDED: "QUOTA_EXCEEDED";
  /** HTTP 429: the server sends LIMIT_EXCEEDED; a rate limit means "wait", a size limit "split". */
  readonly REQUEST_RATE_LIMITED: "REQUEST_RATE_LIMITED";
  /** The server could not be reached, or the connection dropped. */
  readonly NETWORK_FAILURE: "NETWORK_FAILURE";
  /** Not the server: this client cannot do it as set up here (no WebSocket class for live changes). Not retryable. */
  readonly CONFIGURATION_ERROR: "CONFIGURATION_ERROR";
};

/** One of ErrorCode's values, so a `switch` on `error.code` is checked. */
export type ErrorCodeName = (typeof ErrorCode)[keyof typeof ErrorCode];

/** What a CanopyError carries beside its code and message. */
export interface CanopyErrorOptions {
  /** The HTTP status of the answer that carried the error (200 for a record's error in a batch's answer), when there was one. */
  status?: number;
  /** The server's Retry-After, in seconds. */
  retryAfter?: number;
  /** The record a per-record error is about. */
  recordName?: string;
  /** The server's version of the record, on SERVER_RECORD_CHANGED. */
  serverRecord?: CanopyRecord;
  /** On SERVICE_UNAVAILABLE: the write's COMMIT was sent when the database stopped answering. */
  outcomeUnknown?: boolean;
  /** The error underneath (a fetch's TypeError, …). */
  cause?: unknown;
}

/**
 * What went wrong, with the server's code. `retryAfter` is the server's
 * Retry-After in seconds (or undefined); `serverRecord` is set on
 * SERVER_RECORD_CHANGED; `recordName` on a per-record error.
 */
export declare class CanopyError extends Error {
  constructor(code: ErrorCodeName, message: string, options?: CanopyErrorOptions);
  name: "CanopyError";
  code: ErrorCodeName;
  status: number | undefined;
  retryAfter: number | undefined;
  recordName: string | undefined;
  serverRecord: CanopyRecord | undefined;
  /**
   * True on a SERVICE_UNAVAILABLE whose write's COMMIT had been sent when the
   * database stopped answering: it may or may not have been saved. Send it
   * again (a save with the old change tag is then SERVER_RECORD_CHANGED if it
   * was), or read it back.
   */
  outcomeUnknown: boolean;
  /** True for errors that may succeed if the same request is sent again later. */
  get isRetryable(): boolean;
}

/** The part of `Headers` that retryAfterSeconds reads. */
export interface HeadersLike {
  get(name: string): string | null;
}

/** Retry-After in seconds (delta-seconds or an HTTP date), or undefined. */
export declare function retryAfterSeconds(headers: HeadersLike | null | undefined): number | undefined;

/** A GraphQL error object as the server sends it. */
export interface GraphQLErrorObject {
  message?: string;
  code?: string;
  extensions?: {code?: string; [key: string]: unknown};
  recordName?: string;
  serverRecord?: unknown;
  [key: string]: unknown;
}

/** How errorFromGraphQL reads an error: the answer's status and Retry-After, and how to decode a record. */
export interface ErrorFromGraphQLOptions {
  status?: number;
  retryAfter?: number;
  decodeRecord?: (json: any) => CanopyRecord;
}

/** The error of a GraphQL error object (`{message, extensions: {code}}`); HTTP 429 becomes REQUEST_RATE_LIMITED. */
export declare function errorFromGraphQL(error: GraphQLErrorObject | null | undefined, options?: ErrorFromGraphQLOptions): CanopyError;

/** The error of an HTTP answer that is not a success, from its status and body (if any). */
export declare function errorFromResponse(status: number, body: unknown, headers?: HeadersLike | null): CanopyError;
