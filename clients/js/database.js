// One of the container's three databases (`CKDatabase`): zones, records,
// queries, batches, change feeds, live feeds, shares and push
// subscriptions, each a GraphQL document of docs/API.md §3 with every value in
// variables.

import {CanopyError, ErrorCode, errorFromGraphQL} from "./errors.js";
import {CanopyRecord, ZoneID, recordErrorSelection, recordInput, recordSelection} from "./records.js";
import {decodeRecord} from "./transport.js";
import {encodeArguments} from "./values.js";

const zoneSelection = "zoneName ownerName share { url }";
/**
 * The status of the answer that carries per-record errors: a batch's
 * answer is a success (200) even when some of its records fail, and each
 * record's error says so, as an error of the whole request does.
 */
const answered = 200;

const participantSelection = "user { userRecordName name email phone } email phone role permission status isApprovedRequester dateAddedToShare";
const shareSelection = `url title publicPermission zone { zoneName ownerName } rootRecordName
  owner { ${participantSelection} } participants { ${participantSelection} }
  allowsAccessRequests accessRequests { user { userRecordName name email phone } status requestedAt } type thumbnailImageData`;
const subscriptionSelection = "subscriptionID kind scope zone { zoneName ownerName } recordType filter args firesOn";

/** The most records one modify may carry (the server's limit, CloudKit's). */
export const maximumBatchSize = 400;

function zoneOf(json) {
  return json ? new ZoneID(json.zoneName, json.ownerName) : null;
}

function zoneFromServer(json) {
  const zone = zoneOf(json);
  zone.share = json.share ?? null;
  return zone;
}

/** Pages a feed to its end selecting only the token: where "from now on" starts. */
async function feedEnd(database, field, variables, signal) {
  let since = null;
  for (;;) {
    const declarations = field === "zoneChanges" ? "$scope: DatabaseScope!, $zone: ZoneID!, $since: String" : "$scope: DatabaseScope!, $since: String";
    const argumentsText = field === "zoneChanges" ? "scope: $scope, zone: $zone, since: $since, limit: 400" : "scope: $scope, since: $since, limit: 400";
    const data = await database.gql(`query(${declarations}) { page: ${field}(${argumentsText}) { token moreComing } }`, {...variables, since}, {signal});
    since = data.page.token;
    if (!data.page.moreComing) return since;
  }
}

function participantFromServer(json) {
  return {...json, dateAddedToShare: new Date(json.dateAddedToShare)};
}

/** A share (`CKShare`) as the client hands it to an app. */
function shareFromServer(json) {
  if (!json) return null;
  return {
    ...json,
    zoneID: zoneOf(json.zone),
    owner: participantFromServer(json.owner),
    participants: json.participants.map(participantFromServer),
    accessRequests: (json.accessRequests ?? []).map((request) => ({...request, requestedAt: new Date(request.requestedAt)})),
  };
}

function zoneVariable(zone) {
  return ZoneID.from(zone).toJSON();
}

export class Database {
  /** scope: "PRIVATE", "SHARED" or "PUBLIC"; made by the Container. */
  constructor(container, scope) {
    this.container = container;
    this.scope = scope;
  }

  get transport() { return this.container.transport; }

  gql(query, variables, options) {
    return this.transport.graphql(query, variables, options);
  }

  // MARK: Zones

  /** Every zone of this database the caller can see (`allRecordZones`). */
  async zones({withShares = false, signal} = {}) {
    const selection = withShares ? `zoneName ownerName share { ${shareSelection} }` : zoneSelection;
    const data = await this.gql(`query($scope: DatabaseScope!) { zones(scope: $scope) { ${selection} } }`, {scope: this.scope}, {signal});
    return data.zones.map((json) => {
      const zone = zoneOf(json);
      zone.share = withShares ? shareFromServer(json.share) : json.share ?? null;
      return zone;
    });
  }

  /** Creates a zone (private database only); saving one that exists is a no-op. */
  async saveZone(zoneName, {signal} = {}) {
    this.requireScope("PRIVATE", "saveZone");
    const name = typeof zoneName === "string" ? zoneName : ZoneID.from(zoneName).zoneName;
    const data = await this.gql(`mutation($zoneName: String!) { saveZone(zoneName: $zoneName) { ${zoneSelection} } }`, {zoneName: name}, {signal});
    return zoneFromServer(data.saveZone);
  }

  /** Deletes a zone and its records; in the shared database, leaves its share. */
  async deleteZone(zone, {signal} = {}) {
    const data = await this.gql("mutation($scope: DatabaseScope!, $zone: ZoneID!) { deleteZone(scope: $scope, zone: $zone) }",
      {scope: this.scope, zone: zoneVariable(zone)}, {signal});
    return data.deleteZone;
  }

  // MARK: Records

  /**
   * Reads records by name: one result per name, in order, each
   * `{recordName, record}` or `{recordName, error}` (UNKNOWN_ITEM).
   */
  async lookup(zone, recordNames, {desiredKeys, signal} = {}) {
    const withKeys = desiredKeys !== undefined;
    const data = await this.gql(`query($scope: DatabaseScope!, $zone: ZoneID!, $names: [String!]!${withKeys ? ", $desiredKeys: [String!]" : ""}) {
      lookup(scope: $scope, zone: $zone, recordNames: $names) { recordName record { ${recordSelection(withKeys)} } error { code message } } }`,
    {scope: this.scope, zone: zoneVariable(zone), names: recordNames, ...(withKeys ? {desiredKeys} : {})}, {signal});
    return data.lookup.map((result) => ({
      recordName: result.recordName,
      record: result.record ? CanopyRecord.fromServer(result.record) : null,
      error: result.error ? new CanopyError(result.error.code, result.error.message, {status: answered, recordName: result.recordName}) : null,
    }));
  }

  /** One record by name; throws UNKNOWN_ITEM when it does not exist (or is not the caller's to see). */
  async fetchRecord(zone, recordName, options = {}) {
    const [result] = await this.lookup(zone, [recordName], options);
    if (result.error) throw result.error;
    return result.record;
  }

  /**
   * The records of one type matching `filter` (docs/API.md §5, with `args`),
   * sorted, as an async iterator that reads pages of `pageSize` by keyset
   * cursor as it is consumed. `.pages()` iterates whole pages
   * `{records, cursor}`; pass `cursor` to continue a page read earlier.
   */
  query(zone, {recordType, filter, args, sort, desiredKeys, pageSize = 100, cursor = null, signal} = {}) {
    if (typeof recordType !== "string" || recordType === "") throw new TypeError("query needs a recordType");
    const withKeys = desiredKeys !== undefined;
    const document = `query($scope: DatabaseScope!, $zone: ZoneID!, $type: String!, $filter: String, $args: JSON, $sort: [Sort!], $limit: Int, $cursor: String${withKeys ? ", $desiredKeys: [String!]" : ""}) {
      records(scope: $scope, zone: $zone, recordType: $type, filter: $filter, args: $args, sort: $sort, limit: $limit, cursor: $cursor) { records { ${recordSelection(withKeys)} } cursor } }`;
    const variables = {scope: this.scope, zone: zoneVariable(zone), type: recordType, filter: filter ?? null, args: encodeArguments(args),
      sort: sort ? sort.map((item) => typeof item === "string" ? {field: item} : item) : null, limit: pageSize, ...(withKeys ? {desiredKeys} : {})};
    const database = this;
    // The query's signal, and one given to pages() or all(): either aborts.
    const either = (other) => !other ? signal : !signal ? other : AbortSignal.any([signal, other]);
    async function* pages({signal: callSignal} = {}) {
      const aborting = either(callSignal);
      let next = cursor;
      do {
        aborting?.throwIfAborted();
        const data = await database.gql(document, {...variables, cursor: next}, {signal: aborting});
        next = data.records.cursor;
        yield {records: data.records.records.map((record) => CanopyRecord.fromServer(record)), cursor: next};
      } while (next);
    }
    async function* records(options) {
      for await (const page of pages(options)) yield* page.records;
    }
    const iterator = records();
    iterator.pages = pages;
    /** Every matching record in one array (for small results); `signal` stops it between and during pages. */
    iterator.all = async (options = {}) => { const all = []; for await (const record of records(options)) all.push(record); return all; };
    return iterator;
  }

  /**
   * Saves and deletes records in one request (`CKModifyRecordsOperation`):
   * answers `{saved, deleted, errors}`, each error a CanopyError with its
   * recordName and, on SERVER_RECORD_CHANGED, the server's record.
   * atomic (default true): all or nothing. savePolicy: the server's
   * SavePolicy names (default IF_SERVER_RECORD_UNCHANGED).
   */
  async modify(zone, {save = [], delete: deletes = [], deleteIfUnchanged = [], savePolicy, atomic, signal} = {}) {
    if (save.length + deletes.length + deleteIfUnchanged.length > maximumBatchSize) {
      throw new CanopyError(ErrorCode.LIMIT_EXCEEDED, `a batch holds at most ${maximumBatchSize} records; split it`);
    }
    const data = await this.gql(`mutation($scope: DatabaseScope!, $zone: ZoneID!, $save: [RecordInput!], $delete: [String!], $deleteIfUnchanged: [RecordVersion!], $savePolicy: SavePolicy, $atomic: Boolean) {
      modifyRecords(scope: $scope, zone: $zone, save: $save, delete: $delete, deleteIfUnchanged: $deleteIfUnchanged, savePolicy: $savePolicy, atomic: $atomic) {
        saved { ${recordSelection()} } deleted errors { ${recordErrorSelection} } } }`, {
      scope: this.scope, zone: zoneVariable(zone), save: save.map(recordInput), delete: deletes,
      deleteIfUnchanged: deleteIfUnchanged.map((record) => ({recordName: record.recordName, recordChangeTag: record.recordChangeTag})),
      savePolicy: savePolicy ?? "IF_SERVER_RECORD_UNCHANGED", atomic: atomic ?? true,
    }, {signal});
    const result = data.modifyRecords;
    return {
      saved: result.saved.map((record) => CanopyRecord.fromServer(record)),
      deleted: result.deleted,
      errors: result.errors.map((error) => errorFromGraphQL(error, {status: answered, decodeRecord})),
    };
  }

  /** Saves one record; answers it as saved (new change tag), or throws its error. */
  async saveRecord(zone, record, {savePolicy, signal} = {}) {
    const result = await this.modify(zone, {save: [record], savePolicy, signal});
    if (result.errors.length) throw result.errors[0];
    return result.saved[0];
  }

  /** Deletes one record by name; answers its name, or throws its error. */
  async deleteRecord(zone, recordName, {signal} = {}) {
    const result = await this.modify(zone, {delete: [recordName], signal});
    if (result.errors.length) throw result.errors[0];
    return result.deleted[0];
  }

  /**
   * Moves records with their descendants to another zone of the caller's,
   * keeping their names (docs/API.md §17). All or nothing: answers
   * `{moved, errors}`; errors means nothing moved.
   */
  async moveRecords(from, to, recordNames, {withDescendants = true, parent = null, signal} = {}) {
    const data = await this.gql(`mutation($from: ZoneID!, $to: ZoneID!, $names: [String!]!, $descendants: Boolean, $parent: String) {
      moveRecords(from: $from, to: $to, recordNames: $names, withDescendants: $descendants, parent: $parent) { moved errors { ${recordErrorSelection} } } }`,
    {from: zoneVariable(from), to: zoneVariable(to), names: recordNames, descendants: withDescendants, parent}, {signal});
    return {moved: data.moveRecords.moved, errors: data.moveRecords.errors.map((error) => errorFromGraphQL(error, {status: answered, decodeRecord}))};
  }

  // MARK: Change feeds

  /**
   * One page of a zone's changes after `since` (null: everything):
   * `{changed, deleted, token, moreComing}`. Keep `token` for next time.
   */
  async zoneChanges(zone, {since = null, limit = 200, desiredKeys, signal} = {}) {
    const withKeys = desiredKeys !== undefined;
    const data = await this.gql(`query($scope: DatabaseScope!, $zone: ZoneID!, $since: String, $limit: Int${withKeys ? ", $desiredKeys: [String!]" : ""}) {
      zoneChanges(scope: $scope, zone: $zone, since: $since, limit: $limit) { changed { ${recordSelection(withKeys)} } deleted { recordName recordType } token moreComing } }`,
    {scope: this.scope, zone: zoneVariable(zone), since, limit, ...(withKeys ? {desiredKeys} : {})}, {signal});
    return zoneChangesFromServer(data.zoneChanges);
  }

  /** Every page of a zone's changes after `since`, as an async iterator, until `moreComing` is false. */
  async *fetchZoneChanges(zone, {since = null, limit = 200, desiredKeys, signal} = {}) {
    let token = since;
    for (;;) {
      const page = await this.zoneChanges(zone, {since: token, limit, desiredKeys, signal});
      token = page.token;
      yield page;
      if (!page.moreComing) return;
    }
  }

  /**
   * A first sync in parallel (Canopy's addition; docs/CHANGE_FEEDS.md "A
   * first sync in ranges"): the zone's feed position now and its records
   * cut into up to `count` (1-64) ranges, `{position, ranges}`. Read every
   * range with zoneChanges({since: range}) until moreComing is false, at
   * once and in any order; only then follow zoneChanges from `position`.
   */
  async zoneRanges(zone, {count = 8, signal} = {}) {
    const data = await this.gql(`query($scope: DatabaseScope!, $zone: ZoneID!, $count: Int) {
      zoneRanges(scope: $scope, zone: $zone, count: $count) { position ranges } }`,
    {scope: this.scope, zone: zoneVariable(zone), count}, {signal});
    return {position: data.zoneRanges.position, ranges: data.zoneRanges.ranges};
  }

  /**
   * The zone's feed as it ends now, without reading its records: the
   * `since` of a watchZone that hears only what changes from now on.
   */
  zoneChangeToken(zone, {signal} = {}) {
    return feedEnd(this, "zoneChanges", {scope: this.scope, zone: zoneVariable(zone)}, signal);
  }

  /** The database feed as it ends now: the `since` of a watchDatabase from now on. */
  databaseChangeToken({signal} = {}) {
    return feedEnd(this, "databaseChanges", {scope: this.scope}, signal);
  }

  /** One page of the database's changed and deleted zones after `since`. */
  async databaseChanges({since = null, limit = 200, signal} = {}) {
    const data = await this.gql(`query($scope: DatabaseScope!, $since: String, $limit: Int) {
      databaseChanges(scope: $scope, since: $since, limit: $limit) { changedZones { ${zoneSelection} } deletedZones { zoneName ownerName } token moreComing } }`,
    {scope: this.scope, since, limit}, {signal});
    return databaseChangesFromServer(data.databaseChanges);
  }

  /** Every page of the database feed after `since`, as an async iterator. */
  async *fetchDatabaseChanges({since = null, limit = 200, signal} = {}) {
    let token = since;
    for (;;) {
      const page = await this.databaseChanges({since: token, limit, signal});
      token = page.token;
      yield page;
      if (!page.moreComing) return;
    }
  }

  /**
   * A zone's changes as they are committed, over the WebSocket: an async
   * iterator of pages (as zoneChanges answers them) from `since` (null:
   * the whole zone first). Reconnects by itself and resumes from the last
   * page's token; ends when `signal` aborts or the loop breaks.
   */
  watchZone(zone, {since = null, signal} = {}) {
    const iterator = this.container.live.subscribe(`subscription($scope: DatabaseScope!, $zone: ZoneID!, $since: String) {
      zoneChanged(scope: $scope, zone: $zone, since: $since) { changed { ${recordSelection()} } deleted { recordName recordType } token moreComing } }`,
    {scope: this.scope, zone: zoneVariable(zone), since}, {field: "zoneChanged", signal});
    return mapIterator(iterator, zoneChangesFromServer);
  }

  /** The database feed as it changes, over the WebSocket (as watchZone). */
  watchDatabase({since = null, signal} = {}) {
    const iterator = this.container.live.subscribe(`subscription($scope: DatabaseScope!, $since: String) {
      databaseChanged(scope: $scope, since: $since) { changedZones { ${zoneSelection} } deletedZones { zoneName ownerName } token moreComing } }`,
    {scope: this.scope, since}, {field: "databaseChanged", signal});
    return mapIterator(iterator, databaseChangesFromServer);
  }

  // MARK: Sharing

  /** The share of a zone (rootRecordName null) or of a record hierarchy, or null when not shared. */
  async share(zone, {rootRecordName = null, signal} = {}) {
    const data = await this.gql(`query($scope: DatabaseScope!, $zone: ZoneID!, $root: String) { share(scope: $scope, zone: $zone, rootRecordName: $root) { ${shareSelection} } }`,
      {scope: this.scope, zone: zoneVariable(zone), root: rootRecordName}, {signal});
    return shareFromServer(data.share);
  }

  /**
   * Shares a zone of the caller's (rootRecordName null) or a record with
   * its descendants, or changes that share: `title`, `publicPermission`
   * ("NONE", "READ_ONLY", "READ_WRITE"), `participants` ({email | phone |
   * userRecordName, permission, role}), `allowsAccessRequests`, `type`,
   * `thumbnailImageData` (base64). Absent options stay as they are.
   */
  async saveShare(zone, {rootRecordName = null, signal, ...changes} = {}) {
    this.requireScope("PRIVATE", "saveShare");
    // Only the options given are sent: the server keeps what is absent.
    const types = {title: "String", publicPermission: "Permission", participants: "[ParticipantInput!]", allowsAccessRequests: "Boolean",
      type: "String", thumbnailImageData: "String"};
    const given = Object.keys(changes).filter((name) => changes[name] !== undefined);
    for (const name of given) if (!types[name]) throw new TypeError(`saveShare has no option ${name}`);
    const declarations = given.map((name) => `, $${name}: ${types[name]}`).join("");
    const argumentsText = given.map((name) => `, ${name}: $${name}`).join("");
    const variables = {zoneName: ZoneID.from(zone).zoneName, root: rootRecordName};
    for (const name of given) variables[name] = changes[name];
    const data = await this.gql(`mutation($zoneName: String!, $root: String${declarations}) {
      saveShare(zoneName: $zoneName, rootRecordName: $root${argumentsText}) { ${shareSelection} } }`, variables, {signal});
    return shareFromServer(data.saveShare);
  }

  /** Adds a participant or changes their permission; `ownerName` lets an administrator manage another's share. */
  async setParticipant(zone, participant, {rootRecordName = null, signal} = {}) {
    const zoneID = ZoneID.from(zone);
    const data = await this.gql(`mutation($zoneName: String!, $root: String, $participant: ParticipantInput!, $owner: String) {
      setParticipant(zoneName: $zoneName, rootRecordName: $root, participant: $participant, ownerName: $owner) { ${shareSelection} } }`,
    {zoneName: zoneID.zoneName, root: rootRecordName, participant, owner: zoneID.ownerName}, {signal});
    return shareFromServer(data.setParticipant);
  }

  /** Removes a participant, named by `userRecordName`, `email` or `phone`. */
  async removeParticipant(zone, {userRecordName = null, email = null, phone = null}, {rootRecordName = null, signal} = {}) {
    const zoneID = ZoneID.from(zone);
    const data = await this.gql(`mutation($zoneName: String!, $root: String, $user: String, $email: String, $phone: String, $owner: String) {
      removeParticipant(zoneName: $zoneName, rootRecordName: $root, userRecordName: $user, email: $email, phone: $phone, ownerName: $owner) { ${shareSelection} } }`,
    {zoneName: zoneID.zoneName, root: rootRecordName, user: userRecordName, email, phone, owner: zoneID.ownerName}, {signal});
    return shareFromServer(data.removeParticipant);
  }

  /** Stops sharing: participants lose the zone or hierarchy. */
  async deleteShare(zone, {rootRecordName = null, signal} = {}) {
    const data = await this.gql("mutation($zoneName: String!, $root: String) { deleteShare(zoneName: $zoneName, rootRecordName: $root) }",
      {zoneName: ZoneID.from(zone).zoneName, root: rootRecordName}, {signal});
    return data.deleteShare;
  }

  /** Leaves a share the caller accepted (shared database). */
  async leaveShare(zone, {rootRecordName = null, signal} = {}) {
    const data = await this.gql("mutation($zone: ZoneID!, $root: String) { leaveShare(zone: $zone, rootRecordName: $root) }",
      {zone: zoneVariable(zone), root: rootRecordName}, {signal});
    return data.leaveShare;
  }

  /**
   * Decides an access request (docs/API.md §17): `decision` is "approve" (with
   * `permission`), "deny", "block" or "unblock".
   */
  async decideAccessRequest(zone, userRecordName, decision, {rootRecordName = null, permission = "READ_ONLY", signal} = {}) {
    const zoneID = ZoneID.from(zone);
    const field = {approve: "approveAccessRequest", deny: "denyAccessRequest", block: "blockAccessRequest", unblock: "unblockRequester"}[decision];
    if (!field) throw new TypeError(`decision must be approve, deny, block or unblock, not ${decision}`);
    const permissionArgument = decision === "approve" ? ", permission: $permission" : "";
    const data = await this.gql(`mutation($zoneName: String!, $root: String, $user: String!, $owner: String${decision === "approve" ? ", $permission: Permission" : ""}) {
      result: ${field}(zoneName: $zoneName, rootRecordName: $root, userRecordName: $user, ownerName: $owner${permissionArgument}) { ${shareSelection} } }`,
    {zoneName: zoneID.zoneName, root: rootRecordName, user: userRecordName, owner: zoneID.ownerName, ...(decision === "approve" ? {permission} : {})}, {signal});
    return shareFromServer(data.result);
  }

  /** A share's activity log, oldest first, as an async iterator of entries. */
  async *shareActivity(zone, {rootRecordName = null, pageSize = 50, signal} = {}) {
    let after = null;
    do {
      const data = await this.gql(`query($scope: DatabaseScope!, $zone: ZoneID!, $root: String, $after: String, $limit: Int) {
        share(scope: $scope, zone: $zone, rootRecordName: $root) { activity(after: $after, limit: $limit) { entries { event actor subject detail at } cursor } } }`,
      {scope: this.scope, zone: zoneVariable(zone), root: rootRecordName, after, limit: pageSize}, {signal});
      if (!data.share) return;
      const page = data.share.activity;
      for (const entry of page.entries) yield {...entry, at: new Date(entry.at)};
      after = page.cursor;
    } while (after);
  }

  // MARK: Push subscriptions (CKSubscription)

  /**
   * Saves a subscription kept on the server: kind "DATABASE", "ZONE" (needs
   * `zone`) or "QUERY" (needs `recordType`; `filter`, `args`). Replaces one
   * of the same subscriptionID.
   */
  async saveSubscription({subscriptionID, kind, zone = null, recordType = null, filter = null, args = null, firesOn, signal}) {
    const data = await this.gql(`mutation($id: String!, $kind: SubscriptionKind!, $scope: DatabaseScope, $zone: ZoneID, $type: String, $filter: String, $args: JSON, $firesOn: [SubscriptionEvent!]) {
      saveSubscription(subscriptionID: $id, kind: $kind, scope: $scope, zone: $zone, recordType: $type, filter: $filter, args: $args, firesOn: $firesOn) { ${subscriptionSelection} } }`,
    {id: subscriptionID, kind, scope: this.scope, zone: zone ? zoneVariable(zone) : null, type: recordType, filter, args,
      firesOn: firesOn ?? ["CREATE", "UPDATE", "DELETE"]}, {signal});
    return subscriptionFromServer(data.saveSubscription);
  }

  /** The caller's subscriptions in this database. */
  async subscriptions({signal} = {}) {
    const data = await this.gql(`query { subscriptions { ${subscriptionSelection} } }`, {}, {signal});
    return data.subscriptions.filter((item) => item.scope === this.scope).map(subscriptionFromServer);
  }

  /** Deletes a subscription; UNKNOWN_ITEM when the caller has none of that ID. */
  async deleteSubscription(subscriptionID, {signal} = {}) {
    const data = await this.gql("mutation($id: String!) { deleteSubscription(subscriptionID: $id) }", {id: subscriptionID}, {signal});
    return data.deleteSubscription;
  }

  requireScope(scope, operation) {
    if (this.scope !== scope) {
      throw new CanopyError(ErrorCode.INVALID_ARGUMENTS, `${operation} works in the ${scope.toLowerCase()} database, not the ${this.scope.toLowerCase()} one`);
    }
  }
}

function subscriptionFromServer(json) {
  return {...json, zone: zoneOf(json.zone)};
}

function zoneChangesFromServer(page) {
  return {
    changed: page.changed.map((record) => CanopyRecord.fromServer(record)),
    deleted: page.deleted,
    token: page.token,
    moreComing: page.moreComing,
  };
}

function databaseChangesFromServer(page) {
  return {
    changedZones: page.changedZones.map(zoneFromServer),
    deletedZones: page.deletedZones.map(zoneOf),
    token: page.token,
    moreComing: page.moreComing,
  };
}

function mapIterator(iterator, transform) {
  return {
    [Symbol.asyncIterator]() { return this; },
    async next() {
      const step = await iterator.next();
      return step.done ? step : {value: transform(step.value), done: false};
    },
    return() { return iterator.return(); },
    close() { iterator.close(); },
  };
}

export {shareFromServer};
