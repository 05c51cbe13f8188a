"""A real GraphQL subscription client against Canopy: Python's gql with its
websockets transport speaking graphql-transport-ws, the token in
connection_init's payload (as a browser sends it). Subscribes to a zone's
changes from a token, commits a record over HTTP, and prints the first
event as one JSON line, with the milliseconds from commit to event.

usage: gql_subscription.py HTTP_URL TOKEN SINCE
"""
import asyncio
import json
import sys
import time

import requests
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport

http_url, token, since = sys.argv[1], sys.argv[2], sys.argv[3]
ws_url = http_url.replace("http://", "ws://")

SUBSCRIPTION = gql("""subscription Follow($since: String) {
  zoneChanged(scope: PRIVATE, zone: {zoneName: "FromPython"}, since: $since) {
    changed { recordName fields } deleted { recordName } token moreComing } }""")

SAVE = """mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "FromPython"},
  save: [{recordName: "live1", recordType: "Note", fields: {text: "pushed"}}]) { saved { recordName } errors { code } } }"""


async def main():
    transport = WebsocketsTransport(
        url=ws_url,
        init_payload={"Authorization": f"Bearer {token}"},
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
    )
    committed = {}

    def commit():
        answer = requests.post(http_url, json={"query": SAVE}, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        committed["at"] = time.monotonic()
        committed["answer"] = answer.json()

    async def write_later():
        await asyncio.sleep(0.5)
        await asyncio.get_running_loop().run_in_executor(None, commit)

    async with Client(transport=transport, fetch_schema_from_transport=False) as session:
        writer = asyncio.create_task(write_later())
        async for result in session.subscribe(SUBSCRIPTION, variable_values={"since": since}):
            received = time.monotonic()
            await writer
            print(json.dumps({"event": result, "commit": committed["answer"],
                              "ms": round((received - committed["at"]) * 1000, 1)}))
            break


asyncio.run(asyncio.wait_for(main(), timeout=60))
