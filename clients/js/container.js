// The entry point (`CKContainer`): one gateway, one person's token, the
// three databases, and what is not in a database: who is signed in,
// shares opened by URL, assets, push devices, tokens.

import {CanopyError, ErrorCode} from "./errors.js";
import {Auth} from "./auth.js";
import {Database} from "./database.js";
import {LiveConnection} from "./live.js";
import {CanopyRecord, ZoneID, recordSelection} from "./records.js";
import {Transport} from "./transport.js";
import {Asset} from "./values.js";

const metadataSelection = `url title ownerName ownerDisplayName zone { zoneName ownerName } rootRecordName role permission status
  allowsAccessRequests accessRequestStatus type thumbnailImageData`;
const deviceSelection = "deviceID kind apnsEnvironment apnsTopic endpoint url failing signingSecret";

function metadataFromServer(json) {
  return {...json, zoneID: json.zone ? new ZoneID(json.zone.zoneName, json.zone.ownerName) : null,
    rootRecord: json.rootRecord ? CanopyRecord.fromServer(json.rootRecord) : null};
}

export class Container {
  /**
   * baseURL: the gateway (in a web page, default its origin).
   * token: a Canopy token; or tokenProvider: ({refresh}) => token (or a
   * promise), asked again with refresh: true after the server answers 401
   * (an expired sign-in), and the request is sent once more. Neither: the
   * container uses the session of `signIn` (container.auth), and without
   * one reads the public database as nobody. auth: the session's options
   * ({storage: "local" | "session" | "memory" | a Storage, key}).
   * fetch, WebSocket: the implementations to use (default the global ones;
   * Node 20 has WebSocket with --experimental-websocket). requestTimeout:
   * milliseconds a request may go unanswered before it fails as
   * NETWORK_FAILURE (default 60 000; 0: never).
   */
  constructor({baseURL, token, tokenProvider, fetch, WebSocket, requestTimeout, auth} = {}) {
    const signedInBySession = (token === undefined || token === null) && !tokenProvider;
    /** True when the container's token is its session's (`signIn`): data calls and SyncedDatabase follow sign-in and sign-out. */
    this.signedInBySession = signedInBySession;
    this.authOptions = auth ?? {};
    this.authState = null;
    this.transport = new Transport({baseURL, token, fetch, requestTimeout,
      tokenProvider: signedInBySession ? ({refresh}) => (refresh ? this.auth.refresh() : this.auth.session?.token ?? null) : tokenProvider});
    this.live = new LiveConnection(this.transport, WebSocket ?? globalThis.WebSocket);
    this.privateDatabase = new Database(this, "PRIVATE");
    this.sharedDatabase = new Database(this, "SHARED");
    this.publicDatabase = new Database(this, "PUBLIC");
  }

  get baseURL() { return this.transport.baseURL; }

  /** Signing in with the gateway's providers, and the session (auth.js); made at first use. */
  get auth() {
    this.authState ??= new Auth(this, this.authOptions);
    return this.authState;
  }

  /** The signed-in session ({token, prefix, provider, user, signedInAt}), or null. */
  get session() { return this.auth.session; }

  /** The providers the gateway offers to sign in with (GET /auth/providers). */
  signInProviders(options) { return this.auth.providers(options); }

  /** Signs in with a provider, by redirect (default) or popup (`CloudKit.setUpAuth`'s sign-in). */
  signIn(options) { return this.auth.signIn(options); }

  /** On the page a redirect sign-in came back to: finishes it (the session), or null when there is nothing to finish. */
  completeSignIn(href) { return this.auth.completeSignIn(href); }

  /** Revokes the session's token and forgets it. */
  signOut() { return this.auth.signOut(); }

  /** Calls `callback(event, session)` on sign-in changes; answers a function that stops it. */
  onAuthChange(callback) { return this.auth.onAuthChange(callback); }

  /** The database of a scope: "PRIVATE", "SHARED" or "PUBLIC". */
  database(scope) {
    const database = {PRIVATE: this.privateDatabase, SHARED: this.sharedDatabase, PUBLIC: this.publicDatabase}[scope];
    if (!database) throw new TypeError(`scope must be PRIVATE, SHARED or PUBLIC, not ${scope}`);
    return database;
  }

  /**
   * Runs any GraphQL document of the API (Server/schema/canopy.graphql) with
   * bound variables; answers `data` or throws a CanopyError. For what the
   * typed methods do not cover.
   */
  graphql(query, variables = {}, {signal} = {}) {
    return this.transport.graphql(query, variables, {signal});
  }

  /** The signed-in user: {userRecordName, name, email, phone}. */
  async currentUser({signal} = {}) {
    return (await this.graphql("{ me { userRecordName name email phone } }", {}, {signal})).me;
  }

  /**
   * What the signed-in user stores and may store (docs/QUOTAS.md):
   * {usedBytes, storedBytes, fieldBytes, assetBytes, pendingUploadBytes,
   * recordCount, quotaBytes} (quotaBytes null: no limit). Past the quota,
   * saves and uploads fail with QUOTA_EXCEEDED.
   */
  async storageUsage({signal} = {}) {
    return (await this.graphql("{ me { usage { usedBytes storedBytes fieldBytes assetBytes pendingUploadBytes recordCount quotaBytes } } }",
      {}, {signal})).me.usage;
  }

  /**
   * The signed-in user's userRecordName (`CKContainer.userRecordID`). When
   * signed in with `signIn`, from the session, without a request: it
   * answers with the server away (name the offline store by it). With a
   * token of its own, asked of the server.
   */
  async userRecordName(options) {
    const known = this.signedInBySession ? this.auth.session?.user?.userRecordName : undefined;
    if (known) return known;
    return (await this.currentUser(options)).userRecordName;
  }

  /** Another user by email or phone, or null when there is none (`discoverUserIdentity`). */
  async discoverUser({email = null, phone = null} = {}, {signal} = {}) {
    const data = await this.graphql("query($email: String, $phone: String) { discoverUser(email: $email, phone: $phone) { userRecordName name email phone } }",
      {email, phone}, {signal});
    return data.discoverUser;
  }

  /** The container's record types and their fields' types, with what the public database lets the caller do. */
  async recordTypes({signal} = {}) {
    return (await this.graphql("{ recordTypes { name fields { name type } publicAccess { read create write writeOwn } } }", {}, {signal})).recordTypes;
  }

  // MARK: Shares by URL

  /**
   * What a share URL leads to, for the invitation page (`CKShare.Metadata`):
   * owner, title, the caller's role and status; with `rootRecordKeys`, the
   * root record's preview (hierarchy shares the caller may open).
   */
  async shareMetadata(url, {rootRecordKeys, signal} = {}) {
    const withRoot = rootRecordKeys !== undefined;
    const data = await this.graphql(`query($url: String!${withRoot ? ", $desiredKeys: [String!]" : ""}) { shareMetadata(url: $url) {
      ${metadataSelection}${withRoot ? ` rootRecord(desiredKeys: $desiredKeys) { ${recordSelection(true)} }` : ""} } }`,
    {url, ...(withRoot ? {desiredKeys: rootRecordKeys} : {})}, {signal});
    return metadataFromServer(data.shareMetadata);
  }

  /** Accepts a share by its URL; its zone then appears in the shared database. */
  async acceptShare(url, {signal} = {}) {
    const data = await this.graphql(`mutation($url: String!) { acceptShare(url: $url) { ${metadataSelection} } }`, {url}, {signal});
    return metadataFromServer(data.acceptShare);
  }

  /** Asks the owner for access to a share the caller is not in (docs/API.md §17). */
  async requestShareAccess(url, {signal} = {}) {
    const data = await this.graphql(`mutation($url: String!) { requestShareAccess(url: $url) { ${metadataSelection} } }`, {url}, {signal});
    return metadataFromServer(data.requestShareAccess);
  }

  // MARK: Assets

  /**
   * Uploads a file's bytes (a Blob, File, Uint8Array, ArrayBuffer or
   * ReadableStream) and answers an Asset to put in a record's field; the
   * save attaches it (within 24 hours, once).
   */
  async uploadAsset(data, {contentType, signal} = {}) {
    const type = contentType ?? (typeof data?.type === "string" && data.type ? data.type : "application/octet-stream");
    const body = await this.transport.upload(data, type, {signal});
    return new Asset({uploadToken: body.uploadToken, size: body.size, sha256: body.sha256, contentType: type});
  }

  /** The bytes of an asset read from a record (its signed downloadURL needs no token). */
  async downloadAsset(asset, {signal} = {}) {
    if (!asset?.downloadURL) throw new CanopyError(ErrorCode.INVALID_ARGUMENTS, "this asset has no downloadURL: read the record to get one");
    let response;
    try {
      response = await this.transport.fetch(asset.downloadURL, {signal});
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      throw new CanopyError(ErrorCode.NETWORK_FAILURE, `The asset cannot be fetched: ${error?.message ?? error}`, {cause: error});
    }
    if (!response.ok) throw new CanopyError(response.status === 403 ? ErrorCode.PERMISSION_FAILURE : ErrorCode.UNKNOWN_ITEM,
      `The asset's download answered HTTP ${response.status}${response.status === 403 ? " (the URL expired: read the record again)" : ""}.`, {status: response.status});
    return new Uint8Array(await response.arrayBuffer());
  }

  // MARK: Push (docs/API.md §14)

  /** The server's VAPID public key (base64url), the applicationServerKey of pushManager.subscribe. */
  async vapidPublicKey({signal} = {}) {
    return (await this.graphql("{ pushConfiguration { vapidPublicKey } }", {}, {signal})).pushConfiguration.vapidPublicKey;
  }

  /**
   * Registers a browser's Web Push subscription (a PushSubscription or its
   * toJSON()); answers the Device. In a page:
   * `container.registerWebPush(await subscribeToWebPush(registration, container))`.
   */
  async registerWebPush(subscription, {signal} = {}) {
    const json = typeof subscription?.toJSON === "function" ? subscription.toJSON() : subscription;
    if (!json?.endpoint || !json?.keys?.p256dh || !json?.keys?.auth) {
      throw new TypeError("registerWebPush needs a PushSubscription (endpoint and keys p256dh, auth)");
    }
    return this.registerDevice({kind: "WEB_PUSH", endpoint: json.endpoint, p256dh: json.keys.p256dh, auth: json.keys.auth}, {signal});
  }

  /** Registers a webhook (https; http only to loopback); the answer's signingSecret is shown only here. */
  async registerWebhook(url, {signal} = {}) {
    return this.registerDevice({kind: "WEBHOOK", url}, {signal});
  }

  /** Registers a device of any kind (docs/API.md §14's registerDevice arguments). */
  async registerDevice(device, {signal} = {}) {
    const data = await this.graphql(`mutation($kind: DeviceKind!, $apnsToken: String, $apnsEnvironment: APNsEnvironment, $apnsTopic: String, $endpoint: String, $p256dh: String, $auth: String, $url: String) {
      registerDevice(kind: $kind, apnsToken: $apnsToken, apnsEnvironment: $apnsEnvironment, apnsTopic: $apnsTopic, endpoint: $endpoint, p256dh: $p256dh, auth: $auth, url: $url) { ${deviceSelection} } }`,
    {apnsToken: null, apnsEnvironment: null, apnsTopic: null, endpoint: null, p256dh: null, auth: null, url: null, ...device}, {signal});
    return data.registerDevice;
  }

  /** The caller's devices. */
  async devices({signal} = {}) {
    return (await this.graphql(`{ devices { ${deviceSelection} } }`, {}, {signal})).devices;
  }

  /** Unregisters a device; false when the caller has no such device. */
  async unregisterDevice(deviceID, {signal} = {}) {
    return (await this.graphql("mutation($id: String!) { unregisterDevice(deviceID: $id) }", {id: deviceID}, {signal})).unregisterDevice;
  }

  // MARK: Tokens

  /**
   * Trades this request's credential (often a provider's JWT) for a Canopy token: {token, prefix}.
   * form "WEB_AUTH" writes it in the shape of a CloudKit web auth token (for ?ckWebAuthToken=).
   */
  async issueToken({form = "CANOPY", signal} = {}) {
    return (await this.graphql("mutation($form: TokenForm) { issueToken(form: $form) { token prefix } }", {form}, {signal})).issueToken;
  }

  /** Revokes one of the caller's tokens by its prefix (signing out). */
  async revokeToken(prefix, {signal} = {}) {
    return (await this.graphql("mutation($prefix: String!) { revokeToken(prefix: $prefix) }", {prefix}, {signal})).revokeToken;
  }

  /**
   * What the CloudKit Web Services sign-in of an API token needs (Canopy's
   * addition, docs/WEB_SERVICES.md "Signing people in"): the token's
   * sign-in callback, the origins a window may post the web auth token to,
   * its container and environment. `apiToken` is the API token's selector
   * (its first 16 hex digits), never its secret.
   */
  async webServicesSignIn({containerIdentifier, environment, apiToken}, {signal} = {}) {
    const path = `/database/1/${encodeURIComponent(containerIdentifier ?? "")}/${encodeURIComponent(environment ?? "")}/auth/sign-in.json`
      + `?ckAPIToken=${encodeURIComponent(apiToken ?? "")}`;
    let response;
    try {
      response = await this.transport.fetch(this.baseURL + path, {signal});
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      throw new CanopyError(ErrorCode.NETWORK_FAILURE, `The server at ${this.baseURL} cannot be reached: ${error?.message ?? error}`, {cause: error});
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw new CanopyError(response.status === 401 || response.status === 421 ? ErrorCode.NOT_AUTHENTICATED : ErrorCode.BAD_REQUEST,
        body.reason ?? `the server answered ${response.status}`, {status: response.status});
    }
    return body;
  }

  /** Ends live subscriptions and closes the WebSocket. */
  close() {
    this.live.close();
  }
}

/**
 * In a page with a service worker: subscribes its push manager with the
 * server's VAPID key (asking permission if needed) and registers the
 * subscription. Answers the Device.
 */
export async function subscribeToWebPush(registration, container, {signal} = {}) {
  const key = await container.vapidPublicKey({signal});
  const padded = key.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((key.length + 3) % 4);
  const applicationServerKey = Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  const subscription = await registration.pushManager.subscribe({userVisibleOnly: true, applicationServerKey});
  return container.registerWebPush(subscription, {signal});
}
