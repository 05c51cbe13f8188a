"""The workloads W1–W6: the GraphQL each one sends, W3's batches, and each
one's wrk script and pgbench ceiling; the floors for W1 and W2."""
import json
import re

from common import FLOOR_PORT
from drivers import pgbench_script, wrk_script
from servers import Floor


def records_query(zone="Bench", scope="PRIVATE", owner=None):
    owner_name = f', ownerName: "{owner}"' if owner else ""
    return ('query($a: JSON, $c: String) { records(scope: ' + scope + ', zone: {zoneName: "' + zone + '"' + owner_name +
            '}, recordType: "Fast", filter: "endDate > %@ AND endDate <= %@", args: $a, sort: [{field: "endDate"}], '
            'limit: 100, cursor: $c) { records { recordName fields } cursor } }')


def lookup_query(scope="PRIVATE", owner=None, zone="Bench"):
    owner_name = f', ownerName: "{owner}"' if owner else ""
    return ('{ lookup(scope: ' + scope + ', zone: {zoneName: "' + zone + '"' + owner_name + '}, recordNames: ["r4242"]) '
            '{ recordName record { recordName fields recordChangeTag } } }')


LOOKUP = lookup_query()
# The public database (issue 36), asked without a token.
PUBLIC_LOOKUP = lookup_query(scope="PUBLIC", zone="_defaultZone")
PUBLIC_RECORDS = records_query(zone="_defaultZone", scope="PUBLIC")
RECORDS_ARGS = {"a": [{"type": "TIMESTAMP", "value": 1700000000000 + 5000 * 60000},
                      {"type": "TIMESTAMP", "value": 1700000000000 + 900000000 * 60000}]}
CHANGES = ('query($since: String) { zoneChanges(scope: PRIVATE, zone: {zoneName: "Bench"}, since: $since, limit: 400) '
           '{ changed { recordName fields recordChangeTag } deleted { recordName } token moreComing } }')
MODIFY = ('mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Bulk"}, save: $s) '
          '{ saved { recordName recordChangeTag } errors { recordName code } } }')
BATCH = 400


def batch(prefix, count=BATCH):
    """`count` new records (W3's 400 by default), named prefix0, prefix1, …"""
    return [{"recordName": f"{prefix}{i}", "recordType": "Fast",
             "fields": {"hours": i % 48, "endDate": {"type": "TIMESTAMP", "value": 1800000000000 + i * 60000},
                        "note": f"bulk {i}", "tags": [f"t{i % 10}"]}} for i in range(count)]


def lua_batch(count):
    """Lua that fills `parts` with `batch(prefix, count)`'s records as JSON
    text, `prefix` a Lua variable: what W3's and W11's wrk scripts send."""
    return f"""  local parts = {{}}
  for i = 0, {count - 1} do
    parts[#parts + 1] = '{{"recordName":"' .. prefix .. i .. '","recordType":"Fast","fields":{{"hours":' .. (i % 48) ..
      ',"endDate":{{"type":"TIMESTAMP","value":' .. string.format("%.0f", 1800000000000 + i * 60000) ..
      '}},"note":"bulk ' .. i .. '","tags":["t' .. (i % 10) .. '"]}}}}'
  end
"""


def modify_wrk_script(token):
    """W3: each request saves 400 new records, named by run, thread and count."""
    head, tail = json.dumps({"query": MODIFY, "variables": {"s": ["SPLIT"]}}).split('"SPLIT"')
    return f"""
local counter = 0
local run = os.getenv("CANOPY_BENCH_RUN")
local headers = {{["Content-Type"] = "application/json", ["Authorization"] = "Bearer {token}"}}
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
request = function()
  counter = counter + 1
  local prefix = "w" .. run .. "_" .. tid .. "_" .. counter .. "_"
{lua_batch(BATCH)}  return wrk.format("POST", "/graphql", headers, {json.dumps(head)} .. table.concat(parts, ",") .. {json.dumps(tail)})
end
"""


def modify_pgbench_script(user_id, write, read=None):
    """W3's ceiling: the transaction the gateway runs for a batch (identity,
    the write, which answers the saved records itself since issue 51), with
    the batch's names made unique per transaction. With `read` (a batch
    with deletes, and builds before issue 51), the read-back of what was
    saved follows, its ids taken from the write's answer (pgbench's \\gset),
    as the gateway takes them."""
    write_sql, write_parameters = write
    saves = next(number for number, value in write_parameters.items() if value and "W3PREFIX" in value)
    script, defines = pgbench_script(write_sql, write_parameters)
    script = script.replace(f":p{saves}::text", f"replace(:p{saves}::text, 'W3PREFIX', 'c' || :client_id || '_' || :uniq || '_')")
    header = "\\set uniq random(1, 2000000000)\n"
    identity = f"BEGIN;\nSELECT set_config('canopy.user_id', '{user_id}', true), set_config('canopy.schema_mode', 'development', true);\n"
    if read is None:
        return f"{identity}{script};\nCOMMIT", defines, header
    read_sql, read_parameters = read
    ids = next(number for number, value in read_parameters.items() if value and value.startswith("{") and value[1:2].isdigit())
    read_parameters = {number: value for number, value in read_parameters.items() if number != ids}
    read_script, read_defines = pgbench_script(read_sql, read_parameters)
    read_script = read_script.replace(f"NULL::int8[]", "ARRAY(SELECT jsonb_array_elements_text((:w_result)::jsonb -> 'saved')::int8)")
    read_defines = [d.replace("p", "q", 1) for d in read_defines]
    read_script = re.sub(r":p(\d+)", r":q\1", read_script)
    body = f"{identity}SELECT * FROM ({script}) w(found, result) \\gset w_\n{read_script};\nCOMMIT"
    return body, defines + read_defines, header


def floor_requests(token):
    """The requests of W1 and W2's first page, whose statements the floor
    runs too, as capture_statements takes them."""
    return [("lookup", token, LOOKUP, {}, ["unnest("]),
            ("records", token, records_query(), RECORDS_ARGS, ["canopy_ord"])]


def all_requests(owner, guest, deep_args, since, scale_zones):
    """Every workload's request, as capture_statements takes them."""
    token = owner["token"]
    shared_query = records_query(scope="SHARED", owner=owner["userRecordName"])
    return floor_requests(token) + [
        ("deep", token, records_query(), deep_args, ["canopy_ord"]),
        ("shared", guest["token"], shared_query, RECORDS_ARGS, ["canopy_ord"]),
        ("shared lookup", guest["token"], lookup_query(scope="SHARED", owner=owner["userRecordName"]), {}, ["unnest("]),
        ("changes", token, CHANGES, {"since": since}, ["floor AS"]),
        modify_request(token),
        ("public lookup", None, PUBLIC_LOOKUP, {}, ["unnest("]),
        ("public records", None, PUBLIC_RECORDS, RECORDS_ARGS, ["canopy_ord"]),
    ] + [(f"scale{scale}", token, records_query(zone), RECORDS_ARGS, ["canopy_ord"]) for scale, zone in scale_zones.items()]


def ceiling(statements, name):
    """A read's ceiling: pgbench running the gateway's statement for `name`
    ((script, defines), and no header)."""
    sql, parameters = statements[name][0]
    return pgbench_script(sql, parameters), ""


def floor_workloads(token, statements, records):
    """W1 and W2's first page, each as (name, unit, scale, wrk script, wrk
    environment, (pgbench script, defines), pgbench header)."""
    return [
        ("W1 lookup of one record", "requests/s", 1, wrk_script(token, LOOKUP), {}) + ceiling(statements, "lookup"),
        (f"W2 records: date range, sorted, 100 rows of {records:,} (first page)", "requests/s", 1,
         wrk_script(token, records_query(), RECORDS_ARGS), {}) + ceiling(statements, "records"),
    ]


def all_workloads(setup, statements, records, deep_args, token_file):
    """W1–W6, as floor_workloads gives them; `setup` is what loading.load returned."""
    token, guest = setup.owner["token"], setup.guest
    shared_query = records_query(scope="SHARED", owner=setup.owner["userRecordName"])
    workloads = floor_workloads(token, statements, records) + [
        ("W2 records: the same, 50 pages deep (cursor)", "requests/s", 1, wrk_script(token, records_query(), deep_args), {})
        + ceiling(statements, "deep"),
    ]
    workloads.append(w3_workload(setup, statements))
    changes_sql, changes_parameters = statements["changes"][0]
    # The feed position is the parameter the records scan starts after.
    after_parameter = int(re.search(r"r\.change_seq > \$(\d+)::int8", changes_sql).group(1))
    changes_script, changes_defines = pgbench_script(changes_sql, changes_parameters, random_parameter=after_parameter)
    workloads.append(("W4 zoneChanges: 400 changes a request, random positions", "records/s", 400,
                      wrk_script(token, CHANGES, token_file=True), {"CANOPY_BENCH_TOKENS": str(token_file)},
                      (changes_script, changes_defines),
                      f"\\set after random({setup.first_position}, {setup.last_position - 400})\n"))
    workloads.append(("W5 the W2 first page as an accepted READ_ONLY participant (SHARED)", "requests/s", 1,
                      wrk_script(guest["token"], shared_query, RECORDS_ARGS), {}) + ceiling(statements, "shared"))
    for scale, zone in setup.scale_zones.items():
        workloads.append((f"W6 the W2 first page, zone of {scale:,} records", "requests/s", 1,
                          wrk_script(token, records_query(zone), RECORDS_ARGS), {}) + ceiling(statements, f"scale{scale}"))
    workloads.append(("W7 lookup of one public record, without a token", "requests/s", 1,
                      wrk_script(None, PUBLIC_LOOKUP), {}) + ceiling(statements, "public lookup"))
    workloads.append((f"W8 the W2 first page in the public database, {records:,} public records, without a token",
                      "requests/s", 1, wrk_script(None, PUBLIC_RECORDS, RECORDS_ARGS), {}) + ceiling(statements, "public records"))
    return workloads


def w3_workload(setup, statements):
    """W3 as all_workloads gives it: wrk's batches and their ceiling."""
    write_script, write_defines, write_header = modify_pgbench_script(setup.owner_id, *statements["modify"])
    return (f"W3 modifyRecords: batches of {BATCH} new records", "records/s", BATCH, modify_wrk_script(setup.owner["token"]),
            {"CANOPY_BENCH_RUN": "RUN"}, (write_script, write_defines), write_header)


# The statements a save-only batch sends: since issue 51 the write alone (it
# answers the saved records); add "r.id = ANY(" to measure a build before it.
MODIFY_MARKERS = ["canopy.modify_records("]


def modify_request(token):
    """W3's request, as capture_statements takes it."""
    return ("modify", token, MODIFY, {"s": batch("W3PREFIX")}, MODIFY_MARKERS)


def floors(cluster, statements, workloads):
    """The floor for W1 and for W2's first page (the first two workloads),
    each answering with the gateway's own statement, by workload name."""
    return {workloads[0][0]: Floor(cluster, "lookup", "lookup", statements["lookup"][0], FLOOR_PORT),
            workloads[1][0]: Floor(cluster, "records", "records", statements["records"][0], FLOOR_PORT + 1)}


# CloudKit Web Services (issue 37): records/lookup and records/query's first
# page, each beside its GraphQL twin, the very document and variables the
# gateway's Web Services layer runs for it (Server/Sources/CanopyGateway/WebServices/),
# so the two differ by the envelope alone.
CONTAINER = "iCloud.com.example.bench"
WS_SELECTION = ("recordName recordType recordChangeTag parent fields(keys: $keys) created { timestamp userRecordName } "
                "modified { timestamp userRecordName } share { rootRecordName }")
WS_LOOKUP_TWIN = ("query WebServicesLookup($scope: DatabaseScope!, $zone: ZoneID!, $names: [String!]!, $keys: [String!]) "
                  "{ lookup(scope: $scope, zone: $zone, recordNames: $names) { recordName record { " + WS_SELECTION + " } "
                  "error { code message } } }")
WS_QUERY_TWIN = ("query WebServicesQuery($scope: DatabaseScope!, $zone: ZoneID!, $type: String!, $filter: String, $args: JSON, "
                 "$sort: [Sort!], $limit: Int, $cursor: String, $keys: [String!]) { records(scope: $scope, zone: $zone, "
                 "recordType: $type, filter: $filter, args: $args, sort: $sort, limit: $limit, cursor: $cursor) "
                 "{ records { " + WS_SELECTION + " } cursor } }")
LOW, HIGH = RECORDS_ARGS["a"][0]["value"], RECORDS_ARGS["a"][1]["value"]
WS_LOOKUP_BODY = {"zoneID": {"zoneName": "Bench"}, "records": [{"recordName": "r4242"}]}
WS_LOOKUP_VARIABLES = {"scope": "PRIVATE", "zone": {"zoneName": "Bench"}, "names": ["r4242"], "keys": None}
WS_QUERY_BODY = {"zoneID": {"zoneName": "Bench"}, "resultsLimit": 100, "query": {
    "recordType": "Fast",
    "filterBy": [{"fieldName": "endDate", "comparator": "GREATER_THAN", "fieldValue": {"value": LOW, "type": "TIMESTAMP"}},
                 {"fieldName": "endDate", "comparator": "LESS_THAN_OR_EQUALS", "fieldValue": {"value": HIGH, "type": "TIMESTAMP"}}],
    "sortBy": [{"fieldName": "endDate", "ascending": True}]}}
WS_QUERY_VARIABLES = {"scope": "PRIVATE", "zone": {"zoneName": "Bench"}, "type": "Fast", "filter": "endDate > $v0 AND endDate <= $v1",
                      "args": {"v0": {"type": "TIMESTAMP", "value": LOW}, "v1": {"type": "TIMESTAMP", "value": HIGH}},
                      "sort": [{"field": "endDate", "direction": "ASC"}], "limit": 100, "cursor": None, "keys": None}


def web_services_script(body):
    """A wrk script POSTing a Web Services body (the URL carries the tokens)."""
    return (f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n'
            'wrk.headers["Content-Type"] = "application/json"\n')


def web_services_pairs(token, api_token):
    """(name, Web Services (wrk script, path), GraphQL twin wrk script) for
    records/lookup and records/query's first page."""
    path = f"/database/1/{CONTAINER}/production/private/records/"
    query = f"?ckAPIToken={api_token}&ckWebAuthToken={token}"
    return [
        ("W9 records/lookup of one record", (web_services_script(WS_LOOKUP_BODY), path + "lookup" + query),
         wrk_script(token, WS_LOOKUP_TWIN, WS_LOOKUP_VARIABLES)),
        ("W10 records/query: the W2 first page", (web_services_script(WS_QUERY_BODY), path + "query" + query),
         wrk_script(token, WS_QUERY_TWIN, WS_QUERY_VARIABLES)),
    ]
