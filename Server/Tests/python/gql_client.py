"""A real GraphQL client against Canopy: fetches the schema by introspection,
then validates and runs documents against it. Prints one JSON line.

usage: gql_client.py URL TOKEN
"""
import json
import sys

from gql import Client, gql
from gql.transport.requests import RequestsHTTPTransport

url, token = sys.argv[1], sys.argv[2]
transport = RequestsHTTPTransport(url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
with Client(transport=transport, fetch_schema_from_transport=True) as session:
    schema_types = sorted(t for t in session.client.schema.type_map if not t.startswith("__"))
    me = session.execute(gql("query Me { me { userRecordName name } }"))
    zone = session.execute(gql('mutation { saveZone(zoneName: "FromPython") { zoneName } }'))
    saved = session.execute(
        gql("""mutation Save($records: [RecordInput!]) {
                 modifyRecords(scope: PRIVATE, zone: {zoneName: "FromPython"}, save: $records) {
                   saved { recordName recordChangeTag } errors { code } } }"""),
        variable_values={"records": [{"recordName": "py1", "recordType": "Note", "fields": {"text": "hello from gql"}}]},
    )
    found = session.execute(
        gql("""query Find($filter: String) {
                 records(scope: PRIVATE, zone: {zoneName: "FromPython"}, recordType: "Note", filter: $filter) {
                   records { recordName fields } cursor } }"""),
        variable_values={"filter": "self CONTAINS 'HELLO'"},
    )
    try:
        session.execute(gql("{ me { nonsense } }"))
        rejected = False
    except Exception:
        rejected = True
print(json.dumps({"types": schema_types, "me": me, "zone": zone, "saved": saved, "found": found, "rejected_locally": rejected}))
