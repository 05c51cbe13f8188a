// Types of index.js (CanopyJS): the same values it exports, and the types
// an app names when it uses them.

export {Auth} from "./auth.js";
export {Container, subscribeToWebPush} from "./container.js";
export {Database, maximumBatchSize} from "./database.js";
export {CanopyError, ErrorCode} from "./errors.js";
export {CanopyRecord, ZoneID, isRecordType} from "./records.js";
export {IndexedDBStorage, MemoryStorage} from "./storage.js";
export {SyncEngine} from "./sync-engine.js";
export {SyncedDatabase} from "./synced-database.js";
export {Asset, Double, Location, Reference, parseJSON, stringifyJSON} from "./values.js";

export type {AuthChangeEvent, AuthOptions, Session, SessionStorageChoice, SignInOptions, SignInProvider} from "./auth.js";
export type {
  APNsEnvironment, ContainerOptions, Device, DeviceKind, DeviceRegistration, DiscoverUserQuery, IssuedToken,
  PushRegistrationLike, RecordTypeInfo, ShareMetadata, ShareMetadataOptions, TokenForm, UploadAssetOptions,
  WebPushSubscriptionJSON, WebPushSubscriptionLike, WebServicesSignIn,
} from "./container.js";
export type {
  AcceptanceStatus, AccessDecision, AccessRequest, DatabaseChangesOptions, DatabaseChangesPage, DatabaseScope,
  DecideAccessRequestOptions, LookupOptions, LookupResult, ModifyOptions, ModifyResult, MoveRecordsOptions, MoveResult,
  Participant, ParticipantInput, ParticipantName, ParticipantRole, Permission, QueryIterator, QueryOptions, QueryPage,
  RecordVersion, SaveRecordOptions, SaveShareOptions, ServerSubscription, Share, ShareActivityEntry,
  ShareActivityOptions, ShareEventName, ShareOptions, SortKey, SubscriptionEvent, SubscriptionKind,
  SubscriptionOptions, Tombstone, UserIdentity, WatchOptions, ZoneChangesOptions, ZoneChangesPage, ZoneInfo, ZoneRanges,
  ZoneRangesOptions,
} from "./database.js";
export type {CanopyErrorOptions, ErrorCodeName} from "./errors.js";
export type {LiveIterator, WebSocketConstructor} from "./live.js";
export type {
  CanopyRecordJSON, CanopyRecordOptions, FieldsInputOf, RecordOf, RecordTypes, SavableRecord, SavableRecordOf, SavePolicy,
  ShareLink, Stamp, StampJSON, TypedRecord, TypedSavableRecord, ZoneLike,
} from "./records.js";
export type {
  CallerSyncOptions, ChangeTokenExpiredEvent, FailedRecordDelete, FailedRecordSave, FailedZoneChange, FetchedDatabaseChangesEvent,
  FetchedRecordZoneChangesEvent, PendingChangeKind, PendingRecordChange, PendingRecordChangeInput,
  PendingZoneChangeInput, SentDatabaseChangesEvent, SentRecordZoneChangesEvent, StateUpdateEvent, SyncEngineDelegate,
  SyncEngineEvent, SyncEngineOptions, SyncEngineState, SyncErrorEvent, SyncPhaseEvent, ZoneIDJSON,
} from "./sync-engine.js";
export type {
  FetchFunction, GraphQLVariables, RequestOptions, TokenProvider, UploadBody,
} from "./transport.js";
export type {StorageWrite, StoredRefetch, StoredZone, SyncStorage, SyncedDatabaseSnapshot} from "./storage.js";
export type {SyncedDatabaseOptions, SyncedSave, SyncedSaveOf, SyncedZone, TypedSyncedSave} from "./synced-database.js";
export type {
  AssetOptions, EncodedValue, FieldInput, FieldValue, Fields, FieldsInput, LocationOptions, ReferenceAction,
} from "./values.js";
