#!/usr/bin/env python3
"""Generated requests against a live gateway: no input reaches an internal error (issue 48).

Hypothesis makes the requests, seeded and bounded:

- GraphQL documents from Server/schema/canopy.graphql (hypothesis-graphql's
  ``from_schema``, valid and with one schema violation), whose String, Int,
  Float and JSON arguments are hostile values: NUL, lone surrogates (sent as
  the JSON escape ``\\ud800``), combining marks, RTL marks, names of 255 and
  256 code points, 1 MB strings, numbers at and past every bound, nested JSON
  and Canopy's typed field values;
- the same root fields through variables (``modifyRecords``, ``lookup``,
  ``records`` with generated predicates, ``moveRecords``, ``saveShare``,
  ``discoverUser``, ``saveSubscription``, ``zoneChanges``), variables
  sometimes of the wrong type, and broken request envelopes;
- long documents (issue 64): thousands of directives, arguments, variable
  definitions, input-object fields, fragments and validation errors, some
  behind a 1 MB comment, around and past the bounds checked before validation;
- CloudKit Web Services bodies in the reference's shapes (``records/query``
  with every comparator and type, ``records/lookup``, ``records/modify``
  with every operation type, ``zones/lookup``, ``zones/modify``,
  ``changes/zone`` with garbage sync tokens, ``users/discover``, …).

Each request is sent signed in and anonymously. The property, for every
answer: the status is not 5xx, and nothing in it carries the code
INTERNAL_ERROR (GraphQL's ``errors[].extensions.code`` or a record error's
``code``; Web Services' ``serverErrorCode``). After the run, ``GET /health``
must answer 200. The last line is ``generated-requests: N passed, M failed``;
the exit status is 1 on any failure.

    python3 Server/Tests/python/generated_requests.py --url http://127.0.0.1:8091 --token cnp_… \\
        [--api-token cka_…] [--container iCloud.com.example] [--seed N] [--examples N] [--seconds S]

Web Services needs a container API token (``canopy tokens api add``):
``--api-token`` or ``CANOPY_API_TOKEN``. Without one those requests stop at
AUTHENTICATION_FAILED, which is still checked but reaches no operation.
Only loopback addresses are accepted. The requests write (records, zones,
shares, subscriptions, devices, tokens, record types in development mode):
point it at a scratch deployment.
"""
import argparse
import base64
import json
import os
import re
import sys
import time
import urllib.parse
from pathlib import Path

import graphql
import hypothesis_graphql
import requests
from hypothesis import HealthCheck, Verbosity, given, seed, settings
from hypothesis import strategies as st

REPOSITORY = Path(__file__).resolve().parents[3]
SDL_PATH = REPOSITORY / "Server" / "schema" / "canopy.graphql"
TIMEOUT = 30
SHOWN = 2048  # bytes of a request or an answer printed with a failure

# ---------------------------------------------------------------------------
# Hostile values


class Raw:
    """A number written exactly as this text, in JSON and in GraphQL (1e999, 9223372036854775808)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"Raw({self.text})"


MEGABYTE = 1 << 20
BIG_STRINGS = ["a" * MEGABYTE, "\u00e9" * (MEGABYTE // 2), "\x00" * 4096 + "b" * (MEGABYTE - 4096)]
SURROGATES = ["\ud800", "\udfff", "x\ud800y", "\udc00\ud800", "\ud83d\ude00"]  # lone, reversed, a pair as two halves
HOSTILE_STRINGS = [
    "", " ", "\x00", "a\x00b", "\x00" * 64,
    "e" + "\u0301" * 300, "\u0301", "\u202eevil\u202c", "\u200f\u200e", "\ufeff", "\uffff", "\U0010ffff",
    "a" * 255, "a" * 256, "\u00e9" * 255, "\u00e9" * 256, "\U0001f600" * 255, "\U0001f600" * 256,
    "e" + "\u0301" * 254, "\t\r\n", "'", '"', "\\", "\\u0000", "%@", "$x", "${x}", "%s%n", "?", ":1",
    "'; DROP TABLE records; --", "\" OR 1=1 --", "_defaultzone", "cloudkit.zoneshare",
    "cloudkit.share", "cloudkit.share.", "cloudkit.share.x", "..", "../../etc/passwd", "/", "NaN", "-0",
    "1e999", "9223372036854775808", "null", "true", "{}", "[]", "cnp_0000000000000000", "cka_x_y",
    "http://127.0.0.1:1/hook", "https://127.0.0.1:1/share/AAAA", "mailto:\x00@x", "+1\u202e555", "a@b",
    "x" * 4097, "TRUEPREDICATE",
]
# Names that exist, so that many requests get past "not found" into the operation; main() adds the
# signed-in person's userRecordName.
KNOWN_NAMES = ["_defaultZone", "_defaultZone", "Note", "n", "m", "r1", "a@b.example", "+15555550100"]
HOSTILE_INTS = [
    0, 1, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32, 2**53, 2**53 + 1, -(2**53) - 1,
    2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**40, -(10**40),
]
HOSTILE_FLOATS = [0.0, -0.0, 1e308, -1e308, 1.7976931348623157e308, 5e-324, -5e-324, 2.0**53 + 2, 9.223372036854776e18,
                  -9.223372036854776e18, 1e-300, 0.1, 90.0000001, -180.0000001, 1e16]
RAW_NUMBERS = [Raw(t) for t in ("1e999", "-1e999", "1e-999", "1E+308", "-0", "-0.0", "0e0", "1.0e400",
                                "123456789012345678901234567890", "9223372036854775808", "-9223372036854775809",
                                "18446744073709551616", "1e2147483648", "0.000000000000000000000000000001")]
CHARACTERS = st.one_of(
    st.characters(),
    st.sampled_from(["\x00", "\u202e", "\u0301", "\ufeff", "\uffff", "'", '"', "\\", "$", "%", "@", "(", "{"]),
)


def weighted(*choices):
    """One of the strategies, each about `weight` times in 100: weighted((60, a), (40, b))."""
    bounds, total = [], 0
    for weight, strategy in choices:
        total += weight
        bounds.append((total, strategy))
    return st.integers(0, total - 1).flatmap(lambda i: next(s for bound, s in bounds if i < bound))


def mostly(valid, other, percent=85):
    """`valid` about `percent` times in 100, so that most requests get past validation into the operation."""
    return weighted((percent, valid), (100 - percent, other))


def rarely(common, rare, one_in):
    """`rare` about once in `one_in` draws, `common` otherwise."""
    return weighted((one_in - 1, common), (1, rare))


known_names = st.deferred(lambda: st.sampled_from(KNOWN_NAMES))
texts = weighted(
    (60, st.one_of(known_names, st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,15}", fullmatch=True))),
    (37, st.one_of(st.sampled_from(HOSTILE_STRINGS), st.text(alphabet=CHARACTERS, max_size=24),
                   st.builds(lambda a, b: a + b, st.sampled_from(HOSTILE_STRINGS), st.text(alphabet=CHARACTERS, max_size=8)))),
    # Rare, as either stops a request at the door: a lone surrogate (the body's JSON is refused), 1 MB.
    (2, st.one_of(st.sampled_from(SURROGATES), st.text(alphabet=st.characters(categories=["Cs"]), min_size=1, max_size=3))),
    (1, st.sampled_from(BIG_STRINGS)),
)
int32s = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, -1, 1, 2**31 - 1, -(2**31), 400, 401]))
integers = st.one_of(st.sampled_from(HOSTILE_INTS), st.integers(-(2**63), 2**63 - 1), st.integers())
floats = st.one_of(st.sampled_from(HOSTILE_FLOATS), st.floats(allow_nan=False, allow_infinity=False))
numbers = weighted((45, integers), (45, floats), (10, st.sampled_from(RAW_NUMBERS)))  # raw ones may stop a body at the door

RECORD_TYPES = weighted((60, st.sampled_from(["Note", "Note", "Post", "Item", "cloudkit.share", "Users", "pg_class"])), (40, texts))
ZONE_NAMES = weighted((70, st.sampled_from(["_defaultZone", "_defaultZone", "_defaultZone", "Notes", "z"])), (30, texts))
RECORD_NAMES = weighted((50, st.sampled_from(["r1", "r2", "deep", "cloudkit.zoneshare", "cloudkit.share.r1"])), (50, texts))
LITERAL_KEYS = st.one_of(  # GraphQL names, as object literals need them
    st.sampled_from(["n", "m", "s", "t", "loc", "ref", "when", "blob", "tags", "type", "value", "recordName",
                     "a" * 255, "a" * 256, "_x", "A1_"]),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True),
)
KEYS = weighted((70, LITERAL_KEYS), (30, texts))
MANY_NAMES = st.sampled_from([401, 1000, 10000]).map(lambda n: [f"r{i}" for i in range(n)])


def name_lists(max_size):
    """Lists of record names: short ones, and rarely thousands."""
    return rarely(st.lists(RECORD_NAMES, max_size=max_size), MANY_NAMES, one_in=40)


SCOPES = st.sampled_from(["PRIVATE", "PRIVATE", "SHARED", "PUBLIC", "PUBLIC"])
CANOPY_TYPES = ["STRING", "INT64", "DOUBLE", "TIMESTAMP", "BYTES", "REFERENCE", "LOCATION", "ASSETID", "ASSET",
                "BOOLEAN", "STRING_LIST", "INT64_LIST", "DOUBLE_LIST", "TIMESTAMP_LIST", "BYTES_LIST",
                "REFERENCE_LIST", "LOCATION_LIST", "ASSETID_LIST", "LIST<STRING>", "UNKNOWN", "int64", "_LIST"]
FIELD_TYPES = st.one_of(st.sampled_from(CANOPY_TYPES), texts)


def nest(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


deep_values = st.sampled_from([8, 32, 64, 65, 511, 513]).map(nest)
simple_values = st.one_of(st.none(), st.booleans(), numbers, texts)
typed_values = st.one_of(  # Canopy's typed field values (docs/API.md §4)
    st.fixed_dictionaries({"type": st.just("TIMESTAMP"), "value": st.one_of(numbers, texts)}),
    st.fixed_dictionaries({"type": st.just("REFERENCE"), "recordName": st.one_of(RECORD_NAMES, numbers)},
                          optional={"action": st.one_of(st.sampled_from(["NONE", "DELETE_SELF", "VALIDATE"]), texts)}),
    st.fixed_dictionaries({"type": st.just("LOCATION"), "latitude": st.one_of(numbers, texts),
                           "longitude": st.one_of(numbers, texts)}, optional={"altitude": numbers}),
    st.fixed_dictionaries({"type": st.just("BYTES"), "base64": st.one_of(
        texts, st.sampled_from(["", "=", "AA", "AAA=", "####", "A" * 4 * 1000]),
        st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode()))}),
    st.fixed_dictionaries({"type": FIELD_TYPES}, optional={"value": simple_values, "recordName": texts,
                                                           "latitude": numbers, "base64": texts}),
    st.lists(st.fixed_dictionaries({"type": st.just("TIMESTAMP"), "value": numbers}), max_size=3),
)


def json_values(keys):
    leaves = st.one_of(simple_values, typed_values)
    nested = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(keys, inner, max_size=4)), max_leaves=10)
    return rarely(nested, deep_values, one_in=30)


many_fields = st.sampled_from([300, 1000]).map(lambda n: {f"f{i}": i for i in range(n)})


def field_dictionaries(keys):
    """A record's `fields`: mostly an object of field values, sometimes anything at all or very many."""
    return weighted((90, st.dictionaries(keys, json_values(keys), max_size=5)), (8, json_values(keys)), (2, many_fields))


def wrongly(strategy, one_in=15):
    """A variable's value, sometimes replaced by a value of another type."""
    return rarely(strategy, st.one_of(simple_values, st.lists(simple_values, max_size=2), st.just({"x": 1})), one_in)


# ---------------------------------------------------------------------------
# GraphQL: hypothesis-graphql documents with hostile scalars


GRAPHQL_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*\Z")


def value_node(value):
    """A Python value (with `Raw` numbers) as a GraphQL literal."""
    if value is None:
        return graphql.NullValueNode()
    if isinstance(value, bool):
        return graphql.BooleanValueNode(value=value)
    if isinstance(value, int):
        return graphql.IntValueNode(value=str(value))
    if isinstance(value, float):
        return graphql.FloatValueNode(value=repr(value))
    if isinstance(value, Raw):
        is_int = re.fullmatch(r"-?\d+", value.text) is not None
        return (graphql.IntValueNode if is_int else graphql.FloatValueNode)(value=value.text)
    if isinstance(value, str):
        return graphql.StringValueNode(value=value)
    if isinstance(value, list):
        return graphql.ListValueNode(values=tuple(value_node(v) for v in value))
    fields = tuple(graphql.ObjectFieldNode(name=graphql.NameNode(value=k), value=value_node(v))
                   for k, v in value.items() if GRAPHQL_NAME.match(k))
    return graphql.ObjectValueNode(fields=fields)


CUSTOM_SCALARS = {
    "String": texts.map(value_node),
    "Int": st.one_of(int32s, int32s, integers, st.sampled_from(RAW_NUMBERS)).map(value_node),
    "Float": st.one_of(floats, int32s, st.sampled_from(RAW_NUMBERS)).map(value_node),
    "JSON": st.one_of(field_dictionaries(LITERAL_KEYS), json_values(LITERAL_KEYS)).map(value_node),
}


def print_with_graphql_escapes(document):
    """The document with each lone surrogate written as GraphQL's own escape (\\ud800 in the document's text),
    which reaches the GraphQL lexer; graphql.print_ast leaves them as they are, for JSON's escape."""
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", graphql.print_ast(document))


def schema_documents(sdl):
    valid = hypothesis_graphql.from_schema(sdl, custom_scalars=CUSTOM_SCALARS)
    escaped = hypothesis_graphql.from_schema(sdl, custom_scalars=CUSTOM_SCALARS, print_ast=print_with_graphql_escapes)
    invalid = hypothesis_graphql.from_schema(sdl, custom_scalars=CUSTOM_SCALARS, mode=hypothesis_graphql.Mode.NEGATIVE)
    return weighted((60, valid), (15, escaped), (25, invalid)).map(lambda document: {"query": document})


# Documents that take their hostile values as variables.
RECORD = "recordName recordType recordChangeTag parent fields zone { zoneName ownerName } created { timestamp userRecordName }"
SHARE = "url title publicPermission rootRecordName participants { role permission status email phone }"
ERRORS = "errors { recordName code message }"
ZONE_ID = st.fixed_dictionaries({"zoneName": ZONE_NAMES}, optional={"ownerName": st.one_of(st.none(), texts)})
PREDICATE_VALUES = st.one_of(
    st.sampled_from(["1", "-1", "1e999", "-0.0", "9223372036854775808", "-9223372036854775809", "TRUE", "NIL",
                     "$v", "%@", "$missing", "''", "'\\'", "\"x\"", "{1, 2}", "{}"]),
    texts.map(lambda s: f"'{s}'"),
    numbers.map(lambda n: n.text if isinstance(n, Raw) else repr(n)),
)
PREDICATES = st.one_of(
    st.sampled_from([
        "TRUEPREDICATE", "n == $v", "n IN %@", "n IN $v", "n BETWEEN {$a, $b}", "self CONTAINS $t",
        "tags CONTAINS $v", "recordName BEGINSWITH $t", "distanceToLocation:fromLocation:(loc, $p) < 1e308",
        "NOT (n != 1) OR m <= -9223372036854775808", "creationDate > $d", "n == NIL", "n ==", "(", "AND",
        "(" * 32 + "n == 1" + ")" * 32, "(" * 33 + "n == 1" + ")" * 33, "NOT " * 40 + "n == 1",
        "(" * 2000 + "n == 1" + ")" * 2000, " OR ".join(["n == 1"] * 2000), "n IN {" + ",".join(["1"] * 5000) + "}",
    ]),
    st.builds(lambda key, op, value: f"{key} {op} {value}",
              st.one_of(st.sampled_from(["n", "m", "s", "loc", "tags", "recordName", "creationDate", "modifiedBy",
                                         "createdBy", "self", "a" * 256]), texts),
              st.sampled_from(["==", "=", "!=", "<>", "<", "<=", ">", ">=", "IN", "CONTAINS", "BEGINSWITH", "BETWEEN", "LIKE"]),
              PREDICATE_VALUES),
    texts,
)
PREDICATE_ARGS = st.one_of(
    st.fixed_dictionaries({}, optional={"v": json_values(KEYS), "a": numbers, "b": numbers, "t": texts, "d": typed_values,
                                        "p": typed_values}),
    st.lists(json_values(KEYS), max_size=4),
    json_values(KEYS),
)
RECORD_INPUT = st.fixed_dictionaries(
    {"recordName": RECORD_NAMES, "recordType": RECORD_TYPES, "fields": field_dictionaries(KEYS)},
    optional={"recordChangeTag": st.one_of(st.none(), texts), "parent": st.one_of(st.none(), RECORD_NAMES),
              "savePolicy": st.sampled_from(["IF_SERVER_RECORD_UNCHANGED", "CHANGED_KEYS", "ALL_KEYS",
                                             "IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS", "ALWAYS"])})
PARTICIPANT = st.fixed_dictionaries(
    {"permission": st.sampled_from(["NONE", "READ_ONLY", "READ_WRITE", "OWNER"])},
    optional={"email": texts, "phone": texts, "userRecordName": texts,
              "role": st.sampled_from(["OWNER", "ADMINISTRATOR", "PRIVATE_USER", "PUBLIC_USER"])})


def variables(**fields):
    """Variables for a document: required ones always, the others sometimes, each sometimes of a wrong type."""
    required = {k[:-1]: wrongly(v) for k, v in fields.items() if k.endswith("_")}
    optional = {k: wrongly(v) for k, v in fields.items() if not k.endswith("_")}
    return st.fixed_dictionaries(required, optional=optional)


def sync_tokens(real_tokens):
    """Garbage change tokens and cursors, and real ones truncated, flipped or extended."""
    def damaged(token):
        return st.one_of(st.just(token), st.just(token[:-1]), st.just(token + "A"), st.just(token[::-1]),
                         st.integers(0, max(0, len(token) - 1)).map(lambda i: token[:i] + ("B" if token[i:i + 1] != "B" else "C") + token[i + 1:]))
    garbage = st.one_of(texts, st.sampled_from(["", "=", "AAAA", "not-a-token", "0", "-1"]),
                        st.binary(max_size=80).map(lambda b: base64.urlsafe_b64encode(b).decode()))
    return st.one_of(garbage, *(damaged(t) for t in real_tokens)) if real_tokens else garbage


def variable_documents(tokens):
    """The root fields with their hostile values as variables; `tokens`: damaged change tokens and cursors."""
    documents = [
        ("mutation M($scope: DatabaseScope!, $zone: ZoneID!, $save: [RecordInput!], $delete: [String!], "
         "$savePolicy: SavePolicy, $atomic: Boolean, $unchanged: [RecordVersion!]) { modifyRecords(scope: $scope, "
         "zone: $zone, save: $save, delete: $delete, savePolicy: $savePolicy, atomic: $atomic, "
         f"deleteIfUnchanged: $unchanged) {{ saved {{ {RECORD} }} deleted {ERRORS} }} }}",
         variables(scope_=SCOPES, zone_=ZONE_ID, save=st.lists(RECORD_INPUT, max_size=3), delete=name_lists(3),
                   savePolicy=st.sampled_from(["CHANGED_KEYS", "ALL_KEYS", "IF_SERVER_RECORD_UNCHANGED"]), atomic=st.booleans(),
                   unchanged=st.lists(st.fixed_dictionaries({"recordName": RECORD_NAMES, "recordChangeTag": texts}), max_size=2))),
        (f"query Q($scope: DatabaseScope!, $zone: ZoneID!, $names: [String!]!) {{ lookup(scope: $scope, zone: $zone, "
         f"recordNames: $names) {{ recordName record {{ {RECORD} }} error {{ code message }} }} }}",
         variables(scope_=SCOPES, zone_=ZONE_ID, names_=name_lists(5))),
        ("query Q($scope: DatabaseScope!, $zone: ZoneID!, $type: String!, $filter: String, $args: JSON, $sort: [Sort!], "
         "$limit: Int, $cursor: String, $keys: [String!]) { records(scope: $scope, zone: $zone, recordType: $type, "
         f"filter: $filter, args: $args, sort: $sort, limit: $limit, cursor: $cursor) {{ records {{ recordName fields(keys: $keys) }} cursor }} }}",
         variables(scope_=SCOPES, zone_=ZONE_ID, type_=RECORD_TYPES, filter=PREDICATES, args=PREDICATE_ARGS,
                   sort=st.lists(st.fixed_dictionaries({"field": KEYS}, optional={"direction": st.sampled_from(["ASC", "DESC"])}), max_size=3),
                   limit=st.one_of(int32s, integers), cursor=tokens, keys=st.lists(KEYS, max_size=3))),
        ("mutation M($from: ZoneID!, $to: ZoneID!, $names: [String!]!, $descendants: Boolean, $parent: String) { "
         f"moveRecords(from: $from, to: $to, recordNames: $names, withDescendants: $descendants, parent: $parent) {{ moved {ERRORS} }} }}",
         variables(from_=ZONE_ID, to_=ZONE_ID, names_=name_lists(3), descendants=st.booleans(),
                   parent=RECORD_NAMES)),
        ("mutation M($zone: String!, $root: String, $title: String, $permission: Permission, $participants: [ParticipantInput!], "
         "$requests: Boolean, $type: String, $thumbnail: String) { saveShare(zoneName: $zone, rootRecordName: $root, title: $title, "
         "publicPermission: $permission, participants: $participants, allowsAccessRequests: $requests, type: $type, "
         f"thumbnailImageData: $thumbnail) {{ {SHARE} }} }}",
         variables(zone_=ZONE_NAMES, root=RECORD_NAMES, title=texts, permission=st.sampled_from(["NONE", "READ_ONLY", "READ_WRITE"]),
                   participants=st.lists(PARTICIPANT, max_size=3), requests=st.booleans(), type=texts,
                   thumbnail=st.one_of(texts, st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode())))),
        ("query Q($email: String, $phone: String) { discoverUser(email: $email, phone: $phone) { userRecordName name email phone } }",
         variables(email=texts, phone=texts)),
        ("mutation M($id: String!, $kind: SubscriptionKind!, $scope: DatabaseScope, $zone: ZoneID, $type: String, $filter: String, "
         "$args: JSON, $firesOn: [SubscriptionEvent!]) { saveSubscription(subscriptionID: $id, kind: $kind, scope: $scope, zone: $zone, "
         "recordType: $type, filter: $filter, args: $args, firesOn: $firesOn) { subscriptionID kind scope recordType filter args firesOn } }",
         variables(id_=texts, kind_=st.sampled_from(["DATABASE", "ZONE", "QUERY"]), scope=SCOPES, zone=ZONE_ID, type=RECORD_TYPES,
                   filter=PREDICATES, args=PREDICATE_ARGS, firesOn=st.lists(st.sampled_from(["CREATE", "UPDATE", "DELETE"]), max_size=4))),
        ("query Q($scope: DatabaseScope!, $zone: ZoneID!, $since: String, $limit: Int) { zoneChanges(scope: $scope, "
         f"zone: $zone, since: $since, limit: $limit) {{ changed {{ {RECORD} }} deleted {{ recordName recordType }} token moreComing }} }}",
         variables(scope_=SCOPES, zone_=ZONE_ID, since=tokens, limit=st.one_of(int32s, integers))),
    ]
    return st.one_of([values.map(lambda v, document=document: {"query": document, "variables": v})
                      for document, values in documents])


# Envelopes that are themselves wrong: variables not an object, a query not a string, unknown operation names.
broken_envelopes = st.one_of(
    st.fixed_dictionaries({"query": st.just("query Q($a: String) { discoverUser(email: $a) { name } }")},
                          optional={"variables": simple_values, "operationName": st.one_of(texts, st.just("Q"), st.none()),
                                    "extensions": json_values(KEYS)}),
    st.fixed_dictionaries({"query": st.one_of(simple_values, json_values(KEYS))}),
    st.fixed_dictionaries({}, optional={"variables": json_values(KEYS)}),
    json_values(KEYS),
    texts.map(lambda s: {"query": s}),
    st.sampled_from(["query { me { name } } query { me { name } }", "{ me { name } }" * 200, "subscription { databaseChanged(scope: PUBLIC) { token } }",
                     "{ __schema { types { name fields { name args { name } } } } }", "{ me { name ...F } } fragment F on User { ...F }",
                     "{ a: me { name } b: me { name } }" + " " * 1000, "{ me { name @skip(if: true) } }", "query($a: Int = 9223372036854775808) { recordTypes { name } }"])
    .map(lambda q: {"query": q}),
)


# Long documents (issue 64): directives, arguments, variable definitions, input-object fields,
# definitions and validation errors by the thousand, around and far past the counts the gateway
# bounds before validation, and duplicated so that validation would report each one; some behind
# a long comment, which made every error's location cost the document's length.
LONG_COUNTS = st.sampled_from([10, 99, 100, 101, 999, 1001, 5001, 20000])
LONG_DIRECTIVES = st.sampled_from(["@skip(if: false)", "@include(if: true)", "@skip(if: $b)", "@deprecated", "@nope(x: 1)"])
LONG_PADDING = st.sampled_from([0, 0, 20000, 1_000_000])
long_documents = st.one_of(
    st.builds(lambda n, d, pad: "#" + "x" * pad + "\n{ me " + (d + " ") * n + "{ name } }", LONG_COUNTS, LONG_DIRECTIVES, LONG_PADDING),
    st.builds(lambda n: "{ zones(" + "scope: PRIVATE, " * n + ") { zoneName } }", LONG_COUNTS),
    st.builds(lambda n: "query(" + ", ".join(f"$v{i}: Int" for i in range(n)) + ") { me { name } }", LONG_COUNTS),
    st.builds(lambda n: "query(" + ", ".join(["$v: Int"] * n) + ") { me { name } }", LONG_COUNTS),
    st.builds(lambda n: '{ lookup(scope: PRIVATE, zone: {zoneName: "z"' + ', zoneName: "z"' * n + '}, recordNames: []) { recordName } }', LONG_COUNTS),
    st.builds(lambda n: '{ records(scope: PRIVATE, zone: {zoneName: "z"}, recordType: "T", args: {'
              + ", ".join(f"k{i}: [{i}, {{a: {i}}}]" for i in range(n)) + "}) { records { recordName } } }", LONG_COUNTS),
    st.builds(lambda n: "{ me { name } } " + " ".join(f"fragment f{i} on User {{ name }}" for i in range(n)), LONG_COUNTS),
    st.builds(lambda n, pad: "#" + "x" * pad + "\n{ me { " + "nope " * n + "} }", LONG_COUNTS, LONG_PADDING),
    st.builds(lambda n: "{ " + " ".join(f"z: zones(scope: {'PRIVATE' if i % 2 else 'SHARED'}) {{ zoneName }}" for i in range(n)) + " }", LONG_COUNTS),
).map(lambda q: {"query": q})


def graphql_requests(sdl, tokens):
    payloads = weighted((40, schema_documents(sdl)), (40, variable_documents(tokens)), (10, broken_envelopes), (10, long_documents))
    return payloads.map(lambda payload: ("POST", "/graphql", payload))


# ---------------------------------------------------------------------------
# CloudKit Web Services: the reference's request shapes with hostile values

WS_ZONE_ID = st.fixed_dictionaries({"zoneName": ZONE_NAMES}, optional={"ownerRecordName": texts, "zoneType": texts})
COMPARATORS = mostly(st.sampled_from([
    "EQUALS", "NOT_EQUALS", "LESS_THAN", "LESS_THAN_OR_EQUALS", "GREATER_THAN", "GREATER_THAN_OR_EQUALS", "NEAR",
    "CONTAINS_ALL_TOKENS", "IN", "NOT_IN", "CONTAINS_ANY_TOKENS", "LIST_CONTAINS", "NOT_LIST_CONTAINS",
    "NOT_LIST_CONTAINS_ANY", "BEGINS_WITH", "NOT_BEGINS_WITH", "LIST_MEMBER_BEGINS_WITH", "NOT_LIST_MEMBER_BEGINS_WITH",
    "LIST_CONTAINS_ALL", "NOT_LIST_CONTAINS_ALL"]), texts, 90)
SYSTEM_FIELDS = st.one_of(st.sampled_from(["recordName", "createdTimestamp", "modifiedTimestamp", "createdUserRecordName",
                                           "modifiedUserRecordName", "share", "parent", "recordType"]), texts)
LOCATION = st.fixed_dictionaries({"latitude": st.one_of(numbers, texts), "longitude": st.one_of(numbers, texts)},
                                 optional={"horizontalAccuracy": numbers, "altitude": numbers, "timestamp": numbers})
WS_VALUES = st.one_of(
    simple_values, LOCATION,
    st.fixed_dictionaries({"recordName": st.one_of(RECORD_NAMES, numbers)},
                          optional={"action": st.one_of(st.sampled_from(["NONE", "DELETE_SELF", "VALIDATE"]), texts), "zoneID": WS_ZONE_ID}),
    st.fixed_dictionaries({}, optional={"receipt": texts, "fileChecksum": texts, "size": numbers, "downloadURL": texts}),
    st.lists(st.one_of(simple_values, LOCATION), max_size=4),
    json_values(KEYS),
)
WS_FIELD_VALUE = st.fixed_dictionaries({"value": WS_VALUES}, optional={"type": FIELD_TYPES})
WS_FIELDS = rarely(st.dictionaries(KEYS, rarely(WS_FIELD_VALUE, json_values(KEYS), one_in=10), max_size=5),
                   json_values(KEYS), one_in=12)
FILTER = st.fixed_dictionaries({"comparator": COMPARATORS, "fieldValue": rarely(WS_FIELD_VALUE, json_values(KEYS), one_in=10)},
                               optional={"distance": numbers}).flatmap(lambda f: mostly(
                                   st.one_of(KEYS.map(lambda k: {**f, "fieldName": k}),
                                             SYSTEM_FIELDS.map(lambda k: {**f, "systemFieldName": k})),
                                   st.fixed_dictionaries({}, optional={"fieldName": KEYS, "systemFieldName": SYSTEM_FIELDS}).map(
                                       lambda extra: {**f, **extra})))
SORT = st.fixed_dictionaries({}, optional={"fieldName": KEYS, "systemFieldName": SYSTEM_FIELDS,
                                           "ascending": st.one_of(st.booleans(), simple_values), "relativeLocation": LOCATION})
DESIRED_KEYS = st.one_of(st.none(), st.lists(KEYS, max_size=4))
LIMITS = mostly(st.integers(1, 400), st.one_of(st.sampled_from([0, 401, -1, 400.0, 1.5, "200"]), integers,
                                                st.sampled_from(RAW_NUMBERS), texts), 70)
OPERATION_TYPES = mostly(st.sampled_from(["create", "update", "forceUpdate", "replace", "forceReplace", "delete",
                                          "forceDelete"]), texts, 90)
WS_RECORD = st.fixed_dictionaries({}, optional={
    "recordName": RECORD_NAMES, "recordType": RECORD_TYPES, "fields": WS_FIELDS}).flatmap(lambda base: mostly(
    st.tuples(RECORD_NAMES, RECORD_TYPES, WS_FIELDS).map(lambda t: {**base, "recordName": t[0], "recordType": t[1], "fields": t[2]}),
    st.just(base))).flatmap(lambda base: st.fixed_dictionaries({}, optional={
    "recordChangeTag": st.one_of(texts, st.none()), "parent": st.one_of(st.fixed_dictionaries({"recordName": RECORD_NAMES}), simple_values),
    "forRecord": st.fixed_dictionaries({}, optional={"recordName": RECORD_NAMES, "recordChangeTag": texts}),
    "publicPermission": st.one_of(st.sampled_from(["NONE", "READ_ONLY", "READ_WRITE"]), texts),
    "participants": st.lists(st.fixed_dictionaries({}, optional={
        "type": texts, "permission": st.one_of(st.sampled_from(["READ_ONLY", "READ_WRITE", "NONE"]), texts),
        "acceptanceStatus": st.one_of(st.sampled_from(["INVITED", "ACCEPTED", "REMOVED"]), texts),
        "userIdentity": st.fixed_dictionaries({"lookupInfo": st.fixed_dictionaries({}, optional={
            "emailAddress": texts, "phoneNumber": texts, "userRecordName": texts})})}), max_size=2),
}).map(lambda extra: {**base, **extra}))


def ws_bodies(tokens):
    """(operation, body) pairs for the endpoints' reference shapes."""
    zone_request = st.fixed_dictionaries({"zoneID": WS_ZONE_ID}, optional={
        "syncToken": tokens, "desiredRecordTypes": st.lists(RECORD_TYPES, max_size=3), "desiredKeys": DESIRED_KEYS,
        "resultsLimit": LIMITS})
    shapes = {
        "records/query": st.fixed_dictionaries(
            {"query": st.fixed_dictionaries({"recordType": RECORD_TYPES}, optional={
                "filterBy": st.lists(FILTER, max_size=4), "sortBy": st.lists(SORT, max_size=3)})},
            optional={"zoneID": WS_ZONE_ID, "resultsLimit": LIMITS, "continuationMarker": tokens, "desiredKeys": DESIRED_KEYS,
                      "zoneWide": st.booleans(), "numbersAsStrings": st.booleans()}),
        "records/lookup": st.fixed_dictionaries(
            {"records": rarely(st.lists(st.fixed_dictionaries({"recordName": RECORD_NAMES}, optional={"desiredKeys": DESIRED_KEYS}), max_size=4),
                               MANY_NAMES.map(lambda names: [{"recordName": n} for n in names]), one_in=40)},
            optional={"zoneID": WS_ZONE_ID, "desiredKeys": DESIRED_KEYS, "numbersAsStrings": st.booleans()}),
        "records/modify": st.fixed_dictionaries(
            {"operations": st.lists(st.fixed_dictionaries({"operationType": OPERATION_TYPES, "record": WS_RECORD},
                                                          optional={"desiredKeys": DESIRED_KEYS}), min_size=1, max_size=4)},
            optional={"zoneID": WS_ZONE_ID, "atomic": st.one_of(st.booleans(), simple_values), "desiredKeys": DESIRED_KEYS,
                      "numbersAsStrings": st.booleans()}),
        "records/changes": st.fixed_dictionaries({"zoneID": WS_ZONE_ID}, optional={
            "syncToken": tokens, "resultsLimit": LIMITS, "desiredKeys": DESIRED_KEYS, "reverse": simple_values}),
        "zones/lookup": st.fixed_dictionaries({"zones": st.lists(WS_ZONE_ID, max_size=4)}),
        "zones/modify": st.fixed_dictionaries({"operations": st.lists(st.fixed_dictionaries({
            "operationType": st.one_of(st.sampled_from(["create", "delete"]), texts), "zone": st.fixed_dictionaries({"zoneID": WS_ZONE_ID})}),
            min_size=1, max_size=3)}),
        "changes/zone": st.fixed_dictionaries({"zones": st.lists(zone_request, max_size=3)}),
        "changes/database": st.fixed_dictionaries({}, optional={"syncToken": tokens, "resultsLimit": LIMITS}),
        "users/discover": st.fixed_dictionaries({"lookupInfos": st.lists(st.fixed_dictionaries({}, optional={
            "emailAddress": texts, "phoneNumber": texts, "userRecordName": texts}), max_size=3)}),
        "users/lookup/email": st.fixed_dictionaries({"users": st.lists(st.fixed_dictionaries({"emailAddress": texts}), max_size=3)}),
        "subscriptions/lookup": st.fixed_dictionaries({"subscriptions": st.lists(st.fixed_dictionaries({"subscriptionID": texts}), max_size=3)}),
        "records/resolve": st.fixed_dictionaries({"shortGUIDs": st.lists(st.fixed_dictionaries({"value": texts}), max_size=3)}),
        # Issue 66's endpoints: users by record name, the contacts' empty
        # list, subscriptions with notificationInfo and query filters (kept
        # as printed text), and CloudKit JS's tokens/create and register.
        "users/lookup/id": st.fixed_dictionaries({"users": st.lists(st.fixed_dictionaries({"userRecordName": texts}), max_size=3)}),
        "users/lookup/contacts": st.fixed_dictionaries({}, optional={"continuationMarker": texts}),
        "subscriptions/modify": st.fixed_dictionaries({"operations": st.lists(st.fixed_dictionaries({
            "operationType": st.one_of(st.sampled_from(["create", "update", "delete"]), texts),
            "subscription": st.fixed_dictionaries({"subscriptionID": texts}, optional={
                "subscriptionType": st.one_of(st.sampled_from(["zone", "query"]), texts),
                "zoneID": WS_ZONE_ID, "zoneWide": st.booleans(),
                "query": st.fixed_dictionaries({"recordType": RECORD_TYPES}, optional={
                    "filterBy": st.lists(FILTER, max_size=3), "sortBy": st.lists(SORT, max_size=2)}),
                "firesOn": st.lists(st.one_of(st.sampled_from(["create", "update", "delete"]), texts), max_size=3),
                "notificationInfo": st.one_of(st.fixed_dictionaries({}, optional={
                    "alertBody": texts, "shouldBadge": st.one_of(st.booleans(), simple_values),
                    "shouldSendContentAvailable": st.booleans(), "soundName": texts}), simple_values)})}),
            min_size=1, max_size=3)}),
        "tokens/create": st.fixed_dictionaries({}, optional={"apnsEnvironment": st.one_of(st.sampled_from(["development", "production"]), texts)}),
        "tokens/register": st.fixed_dictionaries({}, optional={
            "apnsEnvironment": st.one_of(st.sampled_from(["development", "production"]), texts), "apnsToken": texts}),
    }
    shaped = weighted(*((1, body.map(lambda b, op=op: (op, b))) for op, body in shapes.items()))
    # Sometimes a body that is not the operation's shape at all.
    anything = st.tuples(st.sampled_from(sorted(shapes) + ["zones/list", "users/current", "subscriptions/list"]),
                         st.one_of(json_values(KEYS), texts.map(lambda s: Raw(s)), st.none()))
    return rarely(shaped, anything, one_in=8)


def ws_requests(container, tokens):
    prefix = f"/database/1/{container}/production/"
    # tokens/… name no database (the reference's /device/… path, served here).
    return st.tuples(st.sampled_from(["public", "private", "shared"]), ws_bodies(tokens)).map(
        lambda t: ("POST", prefix + (t[1][0] if t[1][0].startswith("tokens/") else t[0] + "/" + t[1][0]), t[1][1]))


# ---------------------------------------------------------------------------
# Sending and checking


def encode(payload):
    """The request body: JSON whose lone surrogates are written as escapes (\\ud800); `Raw` as its text."""
    if isinstance(payload, Raw):  # a body that is not JSON at all
        text = payload.text
    else:
        raws = []

        def raw_marker(value):
            if not isinstance(value, Raw):
                raise TypeError(type(value))
            raws.append(value.text)
            return f"@@raw{len(raws) - 1}@@"

        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, default=raw_marker)
        for index, raw in enumerate(raws):
            text = text.replace(f'"@@raw{index}@@"', raw, 1)
    text = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode("utf-8")


def internal_errors(value):
    """Every INTERNAL_ERROR code in an answer: extensions.code, a record error's code, serverErrorCode."""
    found = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in ("code", "serverErrorCode"):
                if item.get(key) == "INTERNAL_ERROR":
                    found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def shorten(data, limit=SHOWN):
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


class Gateway:
    def __init__(self, url, token, api_token):
        self.url = url.rstrip("/")
        self.token = token
        self.api_token = api_token
        self.session = requests.Session()
        self.passed = 0
        self.failed = 0
        self.failures = []  # (signature, report), the last one the smallest hypothesis found
        self.started = time.monotonic()

    def send(self, method, path, body, signed):
        headers = {"Content-Type": "application/json"}
        query = {}
        if path.startswith("/database/"):
            if self.api_token:
                query["ckAPIToken"] = self.api_token
            if signed:
                query["ckWebAuthToken"] = self.token
        elif signed:
            headers["Authorization"] = f"Bearer {self.token}"
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = encode(body)
        who = "signed in" if signed else "anonymous"
        try:
            answer = self.session.request(method, url, data=data, headers=headers, timeout=TIMEOUT)
            status, content = answer.status_code, answer.content
        except requests.RequestException as error:
            status, content = None, f"no answer: {error}".encode()
        problem = self.check(status, content)
        if problem is None:
            self.passed += 1
        else:
            self.failed += 1
            report = (f"FAILED ({problem}): {method} {path} ({who})\n  request: {shorten(data)}\n"
                      f"  status: {status}\n  answer: {shorten(content)}")
            if (path, problem) not in {signature for signature, _ in self.failures}:
                print(report, flush=True)  # the first of its kind; hypothesis then shrinks it
            self.failures.append(((path, problem), report))
        total = self.passed + self.failed
        if total % 100 == 0:
            print(f"  {total} requests, {self.failed} failed, {time.monotonic() - self.started:.0f} s", flush=True)
        return problem is None

    @staticmethod
    def check(status, content):
        if status is None:
            return "the server did not answer"
        if status >= 500:
            return f"HTTP {status}"
        try:
            answer = json.loads(content)
        except ValueError:
            return "INTERNAL_ERROR in the answer" if b"INTERNAL_ERROR" in content else None
        return "INTERNAL_ERROR in the answer" if internal_errors(answer) else None

    def health(self):
        try:
            return self.session.get(self.url + "/health", timeout=TIMEOUT).status_code
        except requests.RequestException:
            return None

    def graphql(self, document, variables=None):
        """A setup request, signed in; its answer's data (not checked: the generated requests are)."""
        try:
            answer = self.session.post(self.url + "/graphql", json={"query": document, "variables": variables or {}},
                                       headers={"Authorization": f"Bearer {self.token}"}, timeout=TIMEOUT)
            return answer.json().get("data") or {}
        except (requests.RequestException, ValueError, AttributeError):
            return {}

    def prepare(self):
        """Things for generated requests to find: the person's name, a zone, records r1 and r2 (r2 under r1)."""
        me = self.graphql("{ me { userRecordName } }").get("me") or {}
        if me.get("userRecordName"):
            KNOWN_NAMES.append(me["userRecordName"])
        self.graphql('mutation { saveZone(zoneName: "Notes") { zoneName } }')
        save = [{"recordName": "r1", "recordType": "Note", "fields": {"n": 1, "m": 2}},
                {"recordName": "r2", "recordType": "Note", "fields": {"n": 3}, "parent": "r1"}]
        for scope, zone in (("PRIVATE", "_defaultZone"), ("PRIVATE", "Notes"), ("PUBLIC", "_defaultZone")):
            self.graphql("mutation M($scope: DatabaseScope!, $zone: ZoneID!, $save: [RecordInput!]) { modifyRecords("
                         "scope: $scope, zone: $zone, save: $save, savePolicy: ALL_KEYS) { saved { recordName } } }",
                         {"scope": scope, "zone": {"zoneName": zone}, "save": save})

    def real_tokens(self):
        """A few real change tokens, for the garbage generators to damage."""
        tokens = []
        for scope in ("PUBLIC", "PRIVATE"):
            zone = f'scope: {scope}, zone: {{zoneName: "_defaultZone"}}'
            data = self.graphql(f'{{ zoneChanges({zone}, limit: 1) {{ token }} databaseChanges(scope: PRIVATE) {{ token }} '
                                f'records({zone}, recordType: "Note", limit: 1) {{ cursor }} }}')
            tokens += [((data.get("zoneChanges") or {}).get("token")), (data.get("databaseChanges") or {}).get("token"),
                       (data.get("records") or {}).get("cursor")]
        return [token for token in tokens if token]


class OutOfTime(BaseException):
    """Ends the run at --seconds. A BaseException, so hypothesis stops at once rather than shrinking it."""


def loopback(url):
    host = urllib.parse.urlsplit(url).hostname
    return host in ("127.0.0.1", "localhost", "::1")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the gateway's base URL, http://127.0.0.1:PORT")
    parser.add_argument("--token", required=True, help="a signed-in person's Canopy token")
    parser.add_argument("--api-token", default=os.environ.get("CANOPY_API_TOKEN"),
                        help="a container API token for Web Services (env CANOPY_API_TOKEN)")
    parser.add_argument("--container", default="iCloud.com.example")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=600)
    args = parser.parse_args()
    if not loopback(args.url):
        parser.error("--url must be a loopback address")

    gateway = Gateway(args.url, args.token, args.api_token)
    if gateway.health() != 200:
        print(f"generated-requests: {args.url}/health does not answer 200", file=sys.stderr)
        return 1
    if not args.api_token:
        print("note: no --api-token, so Web Services requests stop at AUTHENTICATION_FAILED", flush=True)
    gateway.prepare()
    tokens = sync_tokens(gateway.real_tokens())
    cases = weighted((55, graphql_requests(SDL_PATH.read_text(), tokens)), (45, ws_requests(args.container, tokens)))
    deadline = gateway.started + args.seconds
    shrink_deadline = None  # once something failed, hypothesis may shrink it for two minutes more
    print(f"generated-requests: seed {args.seed}, at most {args.examples} examples or {args.seconds:g} s", flush=True)

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, derandomize=False, database=None,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @given(case=cases)
    def generated(case):
        nonlocal shrink_deadline
        now = time.monotonic()
        if now > (shrink_deadline or deadline):
            raise OutOfTime()
        method, path, body = case
        ok = all([gateway.send(method, path, body, signed=True), gateway.send(method, path, body, signed=False)])
        if not ok:
            shrink_deadline = shrink_deadline or max(now, deadline) + 120
            raise AssertionError("an answer was a 5xx or INTERNAL_ERROR")

    try:
        generated()
    except OutOfTime:
        print("generated-requests: stopped at the time budget", flush=True)
    except Exception as error:  # the failures are reported below, with the smallest request hypothesis found
        if not gateway.failures:
            raise
        print(f"hypothesis: {type(error).__name__}", flush=True)

    if gateway.failures:
        print("\nDistinct failures (endpoint, problem):")
        for signature in dict.fromkeys(signature for signature, _ in gateway.failures):
            print(f"  {signature[0]}: {signature[1]}")
        print("\nThe last failing request (hypothesis shrinks toward the smallest):")
        print(gateway.failures[-1][1])
    status = gateway.health()
    if status != 200:
        gateway.failed += 1
        print(f"FAILED: GET /health answered {status} after the run", flush=True)
    else:
        gateway.passed += 1
    print(f"generated-requests: {gateway.passed} passed, {gateway.failed} failed")
    return 1 if gateway.failed else 0


if __name__ == "__main__":
    sys.exit(main())
