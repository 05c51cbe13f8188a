// Types of container.js: the entry point (`CKContainer`): one gateway, one
// person's token, the three databases, and what is not in a database.

import type {AcceptanceStatus, Database, DatabaseScope, ParticipantRole, Permission, UserIdentity} from "./database.js";
import type {LiveConnection, WebSocketConstructor} from "./live.js";
import type {Auth, AuthChangeEvent, AuthOptions, Session, SignInOptions, SignInProvider} from "./auth.js";
import type {CanopyRecord, ZoneID} from "./records.js";
import type {FetchFunction, GraphQLVariables, RequestOptions, TokenProvider, Transport, UploadBody} from "./transport.js";
import type {Asset} from "./values.js";

/**
 * Where the gateway is and who is asking. Neither token nor tokenProvider:
 * the container reads the public database as nobody.
 */
export interface ContainerOptions {
  /** The gateway (in a web page, default its origin). */
  baseURL?: string | URL;
  /** A Canopy token. */
  token?: string | null;
  /**
   * Asked for a token; asked again with refresh: true after the server
   * answers 401 (an expired sign-in), and the request is sent once more.
   * Without token or tokenProvider the container uses the session of
   * signIn (and reads the public database as nobody before one).
   */
  tokenProvider?: TokenProvider | null;
  /** Where the signIn session is kept (default localStorage in browsers, memory in Node). */
  auth?: AuthOptions;
  /** The fetch to use (default the global one). */
  fetch?: FetchFunction;
  /** The WebSocket class to use (default the global one; Node 20 has it with --experimental-websocket). */
  WebSocket?: WebSocketConstructor;
  /**
   * Milliseconds a request may go unanswered before it fails as
   * NETWORK_FAILURE, which the sync engine tries again (default 60 000; 0: never).
   */
  requestTimeout?: number;
}

/** What shareMetadata reads besides the metadata. */
export interface ShareMetadataOptions extends RequestOptions {
  /** Read the root record's preview with these fields (hierarchy shares the caller may open). */
  rootRecordKeys?: string[];
}

/** What a share URL leads to, for the invitation page (`CKShare.Metadata`). */
export interface ShareMetadata {
  url: string;
  title: string | null;
  /** The owner's userRecordName. */
  ownerName: string;
  /** The owner's name, as CKShare.Metadata's ownerIdentity. */
  ownerDisplayName: string | null;
  /** The zone as the server sent it. */
  zone: {zoneName: string; ownerName: string};
  zoneID: ZoneID;
  rootRecordName: string | null;
  /** The caller's role and status in the share, if any. */
  role: ParticipantRole | null;
  permission: Permission;
  status: AcceptanceStatus | null;
  allowsAccessRequests: boolean;
  /** The caller's own access request, if any. */
  accessRequestStatus: string | null;
  type: string | null;
  thumbnailImageData: string | null;
  /** The root record's preview, when asked for with rootRecordKeys and allowed. */
  rootRecord: CanopyRecord | null;
}

/** A record type and its fields' types, with what the public database lets the caller do. */
export interface RecordTypeInfo {
  name: string;
  /** type: STRING, INT64, …, LIST<…> (docs/API.md §4). */
  fields: {name: string; type: string}[];
  publicAccess: {read: boolean; create: boolean; write: boolean; writeOwn: boolean};
}

/** Who another user is looked up by. */
export interface DiscoverUserQuery {
  email?: string | null;
  phone?: string | null;
}

/** What uploadAsset sends. */
export interface UploadAssetOptions extends RequestOptions {
  /** Default the Blob's type, else application/octet-stream. */
  contentType?: string;
}

/** A kind of push device (docs/API.md §14). */
export type DeviceKind = "APNS" | "WEB_PUSH" | "WEBHOOK";

/** An APNs environment. */
export type APNsEnvironment = "SANDBOX" | "PRODUCTION";

/** registerDevice's arguments: APNS needs apnsToken (hex) and apnsTopic; WEB_PUSH endpoint, p256dh, auth; WEBHOOK url. */
export interface DeviceRegistration {
  kind: DeviceKind;
  apnsToken?: string | null;
  apnsEnvironment?: APNsEnvironment | null;
  apnsTopic?: string | null;
  endpoint?: string | null;
  p256dh?: string | null;
  auth?: string | null;
  url?: string | null;
}

/** A device notifications are sent to. */
export interface Device {
  deviceID: string;
  kind: DeviceKind;
  apnsEnvironment: APNsEnvironment | null;
  apnsTopic: string | null;
  endpoint: string | null;
  url: string | null;
  /** A notification was given up after a day of failures. */
  failing: boolean;
  /** WEBHOOK: the HMAC key of Canopy-Signature, only in registerDevice's answer. */
  signingSecret: string | null;
}

/** A Web Push subscription as PushSubscription.toJSON() writes it (endpoint and keys p256dh, auth are required). */
export interface WebPushSubscriptionJSON {
  endpoint?: string;
  keys?: {[name: string]: string};
}

/** A browser's PushSubscription, or its toJSON(). */
export type WebPushSubscriptionLike = WebPushSubscriptionJSON | {toJSON(): WebPushSubscriptionJSON};

/**
 * The part of a ServiceWorkerRegistration that subscribeToWebPush uses (it
 * passes userVisibleOnly: true and the server's key as a Uint8Array).
 */
export interface PushRegistrationLike {
  pushManager: {
    subscribe(options: {userVisibleOnly?: boolean; applicationServerKey?: any}): Promise<WebPushSubscriptionLike>;
  };
}

/** The settings of an API token's CloudKit Web Services sign-in (docs/WEB_SERVICES.md). */
export interface WebServicesSignIn {
  container: string;
  environment: string;
  /** The token's sign-in callback, where ?ckWebAuthToken= goes (null: none). */
  callback: string | null;
  /** The origins a window that opened the sign-in may receive the token at. */
  origins: string[];
}

/** A new Canopy token: `token` is shown only here; `prefix` names it for revokeToken. */
/** How issueToken writes a token: `cnp_…`, or 128 letters and digits. */
export type TokenForm = "CANOPY" | "WEB_AUTH";

export interface IssuedToken {
  token: string;
  prefix: string;
}

/** The entry point (`CKContainer`): one gateway, one person's token, the three databases. */
export declare class Container {
  /** Throws TypeError without baseURL outside a web page. */
  constructor(options?: ContainerOptions);
  /** The HTTP side, shared by the databases. */
  readonly transport: Transport;
  /** The WebSocket of the live feeds, shared by the databases. */
  readonly live: LiveConnection;
  readonly privateDatabase: Database;
  readonly sharedDatabase: Database;
  readonly publicDatabase: Database;
  /** True when the container's token is its session's (`signIn`): data calls and SyncedDatabase follow sign-in and sign-out. */
  readonly signedInBySession: boolean;
  /** The gateway's URL without a trailing slash. */
  get baseURL(): string;

  /** Signing in with the gateway's providers, and the session (made at first use). */
  get auth(): Auth;
  /** The signed-in session, or null. */
  get session(): Session | null;
  /** The providers the gateway offers to sign in with (GET /auth/providers). */
  signInProviders(options?: {signal?: AbortSignal}): Promise<SignInProvider[]>;
  /** Signs in with a provider, by redirect (never settles: the page leaves) or popup (the session). */
  signIn(options?: SignInOptions): Promise<Session>;
  /** On the page a redirect sign-in came back to: the session, or null when there is nothing to finish. */
  completeSignIn(href?: string): Promise<Session | null>;
  /**
   * Revokes the session's token, forgets it, and tells listeners
   * (SIGNED_OUT); resolves once the gateway refuses the token. With the
   * server away, signed out here all the same (the token is not revoked).
   */
  signOut(): Promise<void>;
  /** Calls `callback(event, session)` on sign-in changes, INITIAL_SESSION first; answers a function that stops it. */
  onAuthChange(callback: (event: AuthChangeEvent, session: Session | null, detail: {reason?: string}) => void): () => void;

  /** The database of a scope; TypeError for another. */
  database(scope: DatabaseScope): Database;
  /** Runs any GraphQL document of the API with bound variables, for what the typed methods do not cover. */
  graphql<T = any>(query: string, variables?: GraphQLVariables, options?: RequestOptions): Promise<T>;
  /** The signed-in user. */
  currentUser(options?: RequestOptions): Promise<UserIdentity>;
  /** What the signed-in user stores and may store; past quotaBytes, saves and uploads fail with QUOTA_EXCEEDED (docs/QUOTAS.md). */
  storageUsage(options?: RequestOptions): Promise<StorageUsage>;
  /**
   * The signed-in user's userRecordName (`CKContainer.userRecordID`): from
   * the session without a request when signed in with `signIn` (it answers
   * with the server away); else asked of the server.
   */
  userRecordName(options?: RequestOptions): Promise<string>;
  /** Another user by email or phone, or null when there is none (`discoverUserIdentity`). */
  discoverUser(query?: DiscoverUserQuery, options?: RequestOptions): Promise<UserIdentity | null>;
  /** The container's record types and their fields' types. */
  recordTypes(options?: RequestOptions): Promise<RecordTypeInfo[]>;

  /** What a share URL leads to, for the invitation page. */
  shareMetadata(url: string, options?: ShareMetadataOptions): Promise<ShareMetadata>;
  /** Accepts a share by its URL; its zone then appears in the shared database. */
  acceptShare(url: string, options?: RequestOptions): Promise<ShareMetadata>;
  /** Asks the owner for access to a share the caller is not in (docs/API.md §17). */
  requestShareAccess(url: string, options?: RequestOptions): Promise<ShareMetadata>;

  /** Uploads a file's bytes; answers an Asset to put in a record's field (a save attaches it within 24 hours, once). */
  uploadAsset(data: UploadBody, options?: UploadAssetOptions): Promise<Asset>;
  /** The bytes of an asset read from a record (its signed downloadURL needs no token). */
  downloadAsset(asset: Asset | {downloadURL?: string}, options?: RequestOptions): Promise<Uint8Array>;

  /** The server's VAPID public key (base64url), the applicationServerKey of pushManager.subscribe. */
  vapidPublicKey(options?: RequestOptions): Promise<string>;
  /** Registers a browser's Web Push subscription; TypeError without endpoint and keys. */
  registerWebPush(subscription: WebPushSubscriptionLike, options?: RequestOptions): Promise<Device>;
  /** Registers a webhook (https; http only to loopback); the answer's signingSecret is shown only here. */
  registerWebhook(url: string, options?: RequestOptions): Promise<Device>;
  /** Registers a device of any kind. */
  registerDevice(device: DeviceRegistration, options?: RequestOptions): Promise<Device>;
  /** The caller's devices. */
  devices(options?: RequestOptions): Promise<Device[]>;
  /** Unregisters a device; false when the caller has no such device. */
  unregisterDevice(deviceID: string, options?: RequestOptions): Promise<boolean>;

  /**
   * Trades this request's credential (often a provider's JWT) for a Canopy token.
   * `form: "WEB_AUTH"` writes it in the shape of a CloudKit web auth token (for `?ckWebAuthToken=`).
   */
  issueToken(options?: RequestOptions & {form?: TokenForm}): Promise<IssuedToken>;
  /** Revokes one of the caller's tokens by its prefix (signing out); false when none has it. */
  revokeToken(prefix: string, options?: RequestOptions): Promise<boolean>;
  /** What the CloudKit Web Services sign-in of an API token needs (its selector, never its secret). */
  webServicesSignIn(token: {containerIdentifier: string; environment: string; apiToken: string}, options?: RequestOptions): Promise<WebServicesSignIn>;

  /** Ends live subscriptions and closes the WebSocket. */
  close(): void;
}

/**
 * In a page with a service worker: subscribes its push manager with the
 * server's VAPID key (asking permission if needed) and registers the
 * subscription. Answers the Device.
 */
export declare function subscribeToWebPush(registration: PushRegistrationLike, container: Container, options?: RequestOptions): Promise<Device>;

/** `me { usage }`: bytes charged to the signed-in user and their quota (docs/QUOTAS.md). */
export interface StorageUsage {
  /** storedBytes + pendingUploadBytes: what the quota is checked against. */
  usedBytes: number;
  /** fieldBytes + assetBytes. */
  storedBytes: number;
  /** The records' fields, as JSON text, in zones the user owns and public records they created. */
  fieldBytes: number;
  /** The assets those records hold. */
  assetBytes: number;
  /** Uploads not yet attached to a record and not expired. */
  pendingUploadBytes: number;
  recordCount: number;
  /** null: no limit. */
  quotaBytes: number | null;
}
