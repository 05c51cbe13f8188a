// HTTP to the gateway: POST /graphql and POST /assets, with the token from
// the app's provider (asked again once after a 401), errors mapped into
// CanopyError in one place.

import {CanopyError, ErrorCode, errorFromGraphQL, errorFromResponse, retryAfterSeconds} from "./errors.js";
import {parseJSON, stringifyJSON} from "./values.js";
import {CanopyRecord} from "./records.js";

/** Decodes a record-shaped error's server record. */
const decodeRecord = (json) => CanopyRecord.fromServer(json);

export class Transport {
  /**
   * baseURL: the gateway ("https://canopy.example.com"; in a page, default
   * its origin). token: a fixed token; tokenProvider: ({refresh}) => token
   * or a promise of one (refresh: true after the server refused the last).
   * requestTimeout: milliseconds a GraphQL request may go unanswered
   * before it fails as NETWORK_FAILURE (default 60 000; 0: never), so a
   * connection that went quiet is not waited on forever.
   */
  constructor({baseURL, token, tokenProvider, fetch: fetchFunction, requestTimeout = 60_000} = {}) {
    const origin = globalThis.location?.origin;
    const base = baseURL ?? origin;
    if (!base) throw new TypeError("Container needs a baseURL outside a web page");
    this.baseURL = String(base).replace(/\/+$/, "");
    this.tokenProvider = tokenProvider ?? (token === undefined || token === null ? null : () => token);
    this.fetch = fetchFunction ?? globalThis.fetch.bind(globalThis);
    this.requestTimeout = requestTimeout;
  }

  /**
   * The token to send (undefined: anonymous), asked of the provider for
   * each request (a provider caches what is costly to make); refresh: the
   * server refused the last one.
   */
  async token(refresh = false) {
    if (!this.tokenProvider) return undefined;
    return (await this.tokenProvider({refresh})) ?? undefined;
  }

  /**
   * Sends one HTTP request with the token; retries once with a fresh token
   * after a 401. `timeout` (ms, 0: none) also bounds reading the answer:
   * pass the signal send answers in `init.timeoutSignal` on to body().
   */
  async send(path, init, signal, {timeout = 0} = {}) {
    let token = await this.token(false);
    for (let attempt = 0; ; attempt++) {
      const headers = {...init.headers};
      if (token) headers.Authorization = `Bearer ${token}`;
      const timer = timeout > 0 ? AbortSignal.timeout(timeout) : null;
      const either = timer && signal ? AbortSignal.any([signal, timer]) : timer ?? signal;
      let response;
      try {
        response = await this.fetch(this.baseURL + path, {...init, headers, signal: either});
      } catch (error) {
        if (signal?.aborted) throw signal.reason ?? error;
        if (timer?.aborted) throw new CanopyError(ErrorCode.NETWORK_FAILURE, `The server at ${this.baseURL} did not answer within ${timeout / 1000} s`, {cause: error});
        throw new CanopyError(ErrorCode.NETWORK_FAILURE, `The server at ${this.baseURL} cannot be reached: ${error?.message ?? error}`, {cause: error});
      }
      if (response.status === 401 && token && attempt === 0 && this.tokenProvider) {
        await response.body?.cancel?.().catch(() => {});
        token = await this.token(true);
        if (token) continue;
      }
      return response;
    }
  }

  /** Reads a response's JSON body, or undefined when it has none. */
  async body(response, signal) {
    let text;
    try {
      text = await response.text();
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      throw new CanopyError(ErrorCode.NETWORK_FAILURE, `The connection dropped while reading the answer: ${error?.message ?? error}`, {cause: error});
    }
    if (!text) return undefined;
    try {
      return parseJSON(text);
    } catch {
      return undefined;
    }
  }

  /**
   * Runs a GraphQL document; answers `data`, or throws the first error as a
   * CanopyError (with the HTTP status and Retry-After).
   */
  async graphql(query, variables = {}, {signal} = {}) {
    const response = await this.send("/graphql", {
      method: "POST",
      headers: {"Content-Type": "application/json", Accept: "application/json"},
      body: stringifyJSON({query, variables}),
    }, signal, {timeout: this.requestTimeout});
    const body = await this.body(response, signal);
    const first = body?.errors?.[0];
    if (first) throw errorFromGraphQL(first, {status: response.status, retryAfter: retryAfterSeconds(response.headers), decodeRecord});
    if (!response.ok || !body?.data) throw errorFromResponse(response.status, body, response.headers);
    return body.data;
  }

  /** POST /assets: stores bytes; answers {uploadToken, size, sha256}. */
  async upload(bytes, contentType, {signal} = {}) {
    const streaming = typeof ReadableStream !== "undefined" && bytes instanceof ReadableStream;
    const response = await this.send("/assets", {
      method: "POST",
      headers: {"Content-Type": contentType || "application/octet-stream"},
      body: bytes,
      ...(streaming ? {duplex: "half"} : {}),
    }, signal);
    const body = await this.body(response, signal);
    if (!response.ok || !body?.uploadToken) throw errorFromResponse(response.status, body, response.headers);
    return body;
  }
}

export {decodeRecord};
