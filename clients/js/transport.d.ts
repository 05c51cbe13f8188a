// Types of transport.js: HTTP to the gateway (POST /graphql, POST /assets)
// with the app's token. Used by Container and LiveConnection; apps reach it
// through `container.graphql` and `container.uploadAsset`.

import type {CanopyRecord} from "./records.js";

/** What every network method takes: a signal that aborts the request. */
export interface RequestOptions {
  signal?: AbortSignal;
}

/** GraphQL variables by name (BigInt and Double are written exactly). */
export interface GraphQLVariables {
  [name: string]: unknown;
}

/**
 * The app's source of tokens: asked once, then again with refresh: true
 * after the server refused the last (401). null or undefined: anonymous.
 */
export type TokenProvider = (context: {refresh: boolean}) =>
  string | null | undefined | Promise<string | null | undefined>;

/** A fetch to use instead of the global one (tests, proxies). */
export type FetchFunction = (input: string, init?: RequestInit) => Promise<Response>;

/** What an upload sends: a Blob or File, bytes, or a stream (sent with duplex: "half"). */
export type UploadBody = Blob | Uint8Array | ArrayBuffer | ReadableStream<Uint8Array>;

/** What POST /assets answers: the token a save attaches within 24 hours. */
export interface UploadResult {
  uploadToken: string;
  size: number;
  sha256: string;
}

/** Where to send requests and with which token. */
export interface TransportOptions {
  /** The gateway ("https://canopy.example.com"); in a web page, default its origin. */
  baseURL?: string | URL;
  /** A fixed token. */
  token?: string | null;
  /** Asked for a token instead of `token`; again with refresh: true after a 401. */
  tokenProvider?: TokenProvider | null;
  fetch?: FetchFunction;
  /**
   * Milliseconds a GraphQL request may go unanswered (the answer read in
   * full) before it fails as NETWORK_FAILURE, which the sync engine tries
   * again; default 60 000, 0: never. Uploads are not bounded by it.
   */
  requestTimeout?: number;
}

/** The gateway's HTTP side: one place that adds the token and maps answers into CanopyError. */
export declare class Transport {
  /** Throws TypeError without baseURL outside a web page. */
  constructor(options?: TransportOptions);
  /** The gateway's URL without a trailing slash. */
  baseURL: string;
  tokenProvider: TokenProvider | null;
  fetch: FetchFunction;
  /** Milliseconds a GraphQL request may go unanswered (0: never). */
  requestTimeout: number;
  /** The token last given by the provider (undefined: not asked yet, or none). */
  cachedToken: string | undefined;
  /** The token to send (undefined: anonymous); refresh asks the provider for a new one. */
  token(refresh?: boolean): Promise<string | undefined>;
  /** Sends one HTTP request with the token; retries once with a fresh token after a 401. */
  send(path: string, init: RequestInit, signal?: AbortSignal, options?: {timeout?: number}): Promise<Response>;
  /** Reads a response's JSON body, or undefined when it has none (or it is not JSON). */
  body(response: Response, signal?: AbortSignal): Promise<any>;
  /** Runs a GraphQL document; answers `data`, or throws the first error as a CanopyError. */
  graphql<T = any>(query: string, variables?: GraphQLVariables, options?: RequestOptions): Promise<T>;
  /** POST /assets: stores bytes; answers {uploadToken, size, sha256}. */
  upload(bytes: UploadBody, contentType: string, options?: RequestOptions): Promise<UploadResult>;
}

/** Decodes a record-shaped error's server record (CanopyRecord.fromServer). */
export declare const decodeRecord: (json: any) => CanopyRecord;
