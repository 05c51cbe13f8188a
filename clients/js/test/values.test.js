// Field values without a server: a Location and its optional keys
// (CloudKit's Location Dictionary) written and read as the API has them,
// through JSON and through a record's local copy.

import assert from "node:assert/strict";
import {test} from "node:test";
import {CanopyRecord, Location, parseJSON, stringifyJSON} from "../index.js";
import {decodeFields, decodeValue, encodeValue, storableFields} from "../values.js";

const when = new Date(Date.UTC(2026, 3, 1, 12, 0, 5, 250));
const options = {horizontalAccuracy: 4.5, verticalAccuracy: 3, altitude: -2.25, speed: 0, course: 359.5, timestamp: when};

test("a Location of two arguments is written and read as before", () => {
  const place = new Location(52.52, 13.405);
  assert.deepEqual(Object.keys(place), ["latitude", "longitude"]);
  assert.deepEqual(encodeValue(place), {type: "LOCATION", latitude: 52.52, longitude: 13.405});
  const read = decodeValue({type: "LOCATION", latitude: 52.52, longitude: 13.405});
  assert.ok(read instanceof Location);
  assert.deepEqual(Object.keys(read), ["latitude", "longitude"]);
  assert.equal(read.timestamp, undefined);
  assert.deepEqual(Object.keys(new Location(1, 2, {})), ["latitude", "longitude"]);
});

test("a Location's options are properties only when given, and only those are written", () => {
  const some = new Location(10, 20, {altitude: 5, course: undefined});
  assert.deepEqual(Object.keys(some), ["latitude", "longitude", "altitude"]);
  assert.equal(some.course, undefined);
  assert.deepEqual(encodeValue(some), {type: "LOCATION", latitude: 10, longitude: 20, altitude: 5});

  const full = new Location(-33.86, 151.21, options);
  assert.equal(full.timestamp, when);
  assert.equal(full.speed, 0, "a zero is given, not left out");
  assert.deepEqual(encodeValue(full), {type: "LOCATION", latitude: -33.86, longitude: 151.21,
    horizontalAccuracy: 4.5, verticalAccuracy: 3, altitude: -2.25, speed: 0, course: 359.5, timestamp: when.getTime()});
});

test("a Location with every option survives JSON both ways, its timestamp a Date again", () => {
  const text = stringifyJSON({place: encodeValue(new Location(-33.86, 151.21, options))});
  assert.equal(JSON.parse(text).place.timestamp, when.getTime(), "the timestamp is milliseconds on the wire");
  const read = decodeValue(parseJSON(text).place);
  assert.ok(read instanceof Location);
  assert.ok(read.timestamp instanceof Date);
  assert.equal(read.timestamp.getTime(), when.getTime());
  assert.deepEqual(read, new Location(-33.86, 151.21, options));

  const partial = decodeValue({type: "LOCATION", latitude: 1, longitude: 2, horizontalAccuracy: 65, timestamp: 1_700_000_000_000});
  assert.deepEqual(Object.keys(partial).sort(), ["horizontalAccuracy", "latitude", "longitude", "timestamp"]);
  assert.equal(partial.timestamp.getTime(), 1_700_000_000_000);
});

test("a Location with options in a record's local copy and in a list", () => {
  const record = new CanopyRecord({recordName: "r", recordType: "Visit", fields: {
    at: new Location(48.8566, 2.3522, options), route: [new Location(0, 0), new Location(1, 1, {speed: 3})]}});
  const copy = CanopyRecord.fromJSON(JSON.parse(JSON.stringify(record)));
  assert.deepEqual(copy.fields, record.fields);
  assert.ok(copy.fields.at.timestamp instanceof Date);
  assert.deepEqual(decodeFields(storableFields(record.fields)), record.fields);
});

test("a Location option of the wrong kind is refused naming the field", () => {
  assert.throws(() => encodeValue(new Location(1, 2, {timestamp: when.getTime()}), "place"), /field place: .*timestamp is a Date/);
  assert.throws(() => encodeValue(new Location(1, 2, {timestamp: new Date(Number.NaN)}), "place"), /field place: .*invalid Date/);
  assert.throws(() => encodeValue(new Location(1, 2, {speed: "fast"}), "place"), TypeError);
  assert.throws(() => encodeValue(new Location(1, 2, {course: Number.POSITIVE_INFINITY}), "place"), /field place: .*course/);
});
