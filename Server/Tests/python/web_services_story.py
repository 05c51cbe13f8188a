"""What a CloudKit web app does, through Canopy's Web Services, with a client
written only from Apple's reference (cloudkit_ws_client.py):

1. asks who is signed in and is answered 421 AUTHENTICATION_REQUIRED with a
   redirectURL; a person opens it in a browser (headless Chromium), signs in
   and continues; the page sends them back to the API token's sign-in
   callback with ?ckWebAuthToken=…, which the app keeps;
2. makes a zone and a record, queries it, saves with a stale tag and is
   answered CONFLICT;
3. follows changes/zone with a syncToken: everything, then only what changed;
4. uploads an asset in two steps and reads its downloadURL back;
5. shares the zone with a second person (a cloudkit.share record), who signs
   in the same way, accepts by the share's shortGUID and reads the record in
   the shared database;
6. does in a page what CloudKit JS does (issue 66): a signed-out public read
   with ckWebAuthToken=null, its sign-in button (the message's ckSession),
   private zones and a sync, and registerForNotifications (tokens/create,
   tokens/register, a long poll of the webcourierURL, answered when
   another device changes the zone).

Usage: web_services_story.py BASE CONTAINER API_TOKEN POPUP_API_TOKEN APP_PORT ALICE_TOKEN BOB_TOKEN BOB_EMAIL ARTIFACTS
(the people's Canopy tokens are what they type into the sign-in page).
API_TOKEN has a sign-in callback: alice comes back on it. POPUP_API_TOKEN
has none: bob signs in from the app's page on 127.0.0.1:APP_PORT (an
allowed origin), in a window it opened, which posts the token back to it.
Prints one JSON line of what it saw; exits non-zero on any mismatch.
"""
import http.server
import json
import sys
import threading
import urllib.parse
import urllib.request

import console_browser as console
from cloudkit_ws_client import CloudKit, CloudKitError

base, container, api_token, popup_api_token, app_port, alice_token, bob_token, bob_email, artifacts = sys.argv[1:10]
console.use_artifacts(artifacts)
seen = {}


def check(condition, what):
    if not condition:
        raise AssertionError(what)


# The app's own page (another origin, on loopback), as CloudKit JS does
# it: open the redirectURL in a window, listen for the message and read its
# ckSession (what CloudKit JS's sign-in button reads); the reference's
# ckWebAuthToken must carry the same token.
APP_PAGE = b"""<!doctype html><title>app</title><p id="token">waiting</p><p id="same">unknown</p>
<script>
window.addEventListener("message", (event) => {
  if (!event.data || !event.data.ckSession) return;
  document.getElementById("same").textContent = String(event.data.ckWebAuthToken === event.data.ckSession);
  document.getElementById("token").textContent = event.data.ckSession;
});
function signIn(url) { window.open(url, "signin", "width=500,height=700"); }
</script>"""


class AppPage(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(APP_PAGE)

    def log_message(self, *_):
        pass


app_server = http.server.ThreadingHTTPServer(("127.0.0.1", int(app_port)), AppPage)
threading.Thread(target=app_server.serve_forever, daemon=True).start()


def sign_in_by_popup(person, typed_token):
    """The 421 dance without a callback: the app's page opens redirectURL
    and is posted the token."""
    app = CloudKit(base, container, "production", popup_api_token)
    try:
        app.current_user()
        raise AssertionError("users/current answered without a web token")
    except CloudKitError as error:
        check(error.status == 421 and error.redirect_url, f"expected a 421 with a redirectURL, got {error.status} {error.body}")
        redirect = error.redirect_url
    driver = console.browser()
    try:
        driver.get(f"http://127.0.0.1:{app_port}/")
        app_window = driver.current_window_handle
        driver.execute_script("signIn(arguments[0])", redirect)
        console.wait(driver, lambda d: len(d.window_handles) == 2, "the sign-in window")
        driver.switch_to.window([h for h in driver.window_handles if h != app_window][0])
        console.sign_in(driver, typed_token)
        console.visible(driver, "#web-services-continue", "the sign-in page's Continue button")
        console.step(driver, f"{person}-web-services-sign-in-popup")
        console.click(driver, "#web-services-continue", "the Continue button of the sign-in page")
        driver.switch_to.window(app_window)
        token = console.wait(driver, lambda d: (t := d.find_element(console.By.ID, "token").text) != "waiting" and t,
                             "the token posted to the app's page")
        same = driver.find_element(console.By.ID, "same").text
        check(same == "true", f"the message's ckWebAuthToken is its ckSession: {same}")
    finally:
        driver.quit()
    app.set_web_auth_token(token)
    me = app.current_user()
    check(me.get("userRecordName"), f"users/current after signing in: {me}")
    seen[f"{person}_user"] = me
    return app


def sign_in(person, typed_token):
    """The 421 dance: the redirectURL, a person signing in, the callback's token."""
    app = CloudKit(base, container, "production", api_token)
    try:
        app.current_user()
        raise AssertionError("users/current answered without a web token")
    except CloudKitError as error:
        check(error.status == 421 and error.code == "AUTHENTICATION_REQUIRED" and error.redirect_url,
              f"expected 421 AUTHENTICATION_REQUIRED with a redirectURL, got {error.status} {error.body}")
        redirect = error.redirect_url
    driver = console.browser()
    try:
        driver.get(redirect)
        console.sign_in(driver, typed_token)
        console.visible(driver, "#web-services-continue", "the sign-in page's Continue button")
        console.step(driver, f"{person}-web-services-sign-in")
        console.click(driver, "#web-services-continue", "the Continue button of the sign-in page")
        console.wait(driver, lambda d: "ckWebAuthToken=" in d.current_url, "the sign-in callback with ckWebAuthToken")
        query = urllib.parse.urlparse(driver.current_url).query
        token = urllib.parse.parse_qs(query)["ckWebAuthToken"][0]
    finally:
        driver.quit()
    app.set_web_auth_token(token)
    me = app.current_user()
    check(me.get("userRecordName"), f"users/current after signing in: {me}")
    seen[f"{person}_user"] = me
    return app


# 1. alice signs in.
alice = sign_in("alice", alice_token)
zone_id = {"zoneName": "Recipes"}

# 2. A zone, a record, a query, a stale tag.
created_zone = alice.create_zone("Recipes")
check(created_zone.get("zoneID", {}).get("zoneName") == "Recipes", f"zones/modify: {created_zone}")
saved = alice.modify("private", zone_id, [{"operationType": "create", "record": {
    "recordType": "Recipe", "recordName": "soup", "fields": {"title": {"value": "Leek soup"}, "minutes": {"value": 40, "type": "INT64"}}}}])[0]
first_tag = saved["recordChangeTag"]
found = alice.query("private", zone_id, "Recipe", filter_by=[{"fieldName": "minutes", "comparator": "LESS_THAN", "fieldValue": {"value": 60}}])
check([r["recordName"] for r in found["records"]] == ["soup"], f"records/query: {found}")
updated = alice.modify("private", zone_id, [{"operationType": "update", "record": {
    "recordName": "soup", "recordChangeTag": first_tag, "fields": {"minutes": {"value": 35}}}}])[0]
check(updated.get("fields", {}).get("title", {}).get("value") == "Leek soup", f"update kept the title: {updated}")
stale = alice.modify("private", zone_id, [{"operationType": "update", "record": {
    "recordName": "soup", "recordChangeTag": first_tag, "fields": {"minutes": {"value": 30}}}}])[0]
check(stale.get("serverErrorCode") == "CONFLICT", f"a stale tag is CONFLICT: {stale}")
seen["conflict"] = stale["serverErrorCode"]

# 3. changes/zone with a syncToken.
everything = alice.zone_changes("private", zone_id)
check([r["recordName"] for r in everything["records"]] == ["soup"] and not everything["moreComing"], f"changes/zone: {everything}")
alice.modify("private", zone_id, [{"operationType": "create", "record": {"recordType": "Recipe", "recordName": "salad", "fields": {"title": {"value": "Salad"}}}}])
since = alice.zone_changes("private", zone_id, everything["syncToken"])
check([r["recordName"] for r in since["records"]] == ["salad"], f"changes/zone since the token: {since}")
seen["changes"] = [r["recordName"] for r in since["records"]]

# 4. An asset in two steps.
picture = b"\x89PNG a picture of leek soup"
record_name, single_file = alice.upload_asset("private", zone_id, "Recipe", "photo", picture, record_name="soup-photo")
alice.modify("private", zone_id, [{"operationType": "create", "record": {
    "recordType": "Recipe", "recordName": record_name, "fields": {"title": {"value": "Soup, pictured"}, "photo": {"value": single_file}}}}])
photo = alice.lookup("private", zone_id, [record_name])[0]["fields"]["photo"]
check(photo["value"]["size"] == len(picture) and photo["value"].get("downloadURL"), f"the asset: {photo}")
with urllib.request.urlopen(photo["value"]["downloadURL"], timeout=30) as response:
    check(response.read() == picture, "the downloaded bytes are the uploaded ones")
seen["asset"] = photo["type"]

# 5. Share the zone with bob; bob signs in, accepts and reads.
share = alice.modify("private", zone_id, [{"operationType": "create", "record": {
    "recordType": "cloudkit.share", "fields": {"cloudkit.title": {"value": "Our recipes"}}, "publicPermission": "NONE",
    "participants": [{"type": "USER", "permission": "READ_WRITE", "acceptanceStatus": "INVITED",
                      "userIdentity": {"lookupInfo": {"emailAddress": bob_email}}}]}}])[0]
check(share.get("recordType") == "cloudkit.share" and isinstance(share.get("shortGUID"), dict) and share["shortGUID"].get("value"),
      f"the share, its shortGUID a ShortGUID Dictionary: {share}")
bob = sign_in_by_popup("bob", bob_token)
accepted = bob.accept(share["shortGUID"]["value"])
check(accepted.get("participantStatus") == "ACCEPTED", f"records/accept: {accepted}")
shared_zone = {"zoneName": "Recipes", "ownerRecordName": seen["alice_user"]["userRecordName"]}
check(any(z["zoneID"]["zoneName"] == "Recipes" for z in bob.list_zones("shared")), "the zone is in bob's shared database")
read = bob.query("shared", shared_zone, "Recipe", sort_by=[{"fieldName": "title", "ascending": True}])
seen["bob_reads"] = [r["recordName"] for r in read["records"]]
check(set(seen["bob_reads"]) == {"soup", "salad", "soup-photo"}, f"bob reads the shared zone: {read}")

# 6. What CloudKit JS does in a page (issue 66), every request from the
#    app's own origin as its published behaviour describes: signed out it
#    sends ckWebAuthToken=null and reads the public database; its sign-in
#    button opens the 421's redirectURL and reads the message's ckSession;
#    then private zones and a sync; then registerForNotifications:
#    tokens/create, tokens/register, and a long poll of the webcourierURL.
PAGE_CALL = """
const [base, container, apiToken, subpath, body, session, method, done] = arguments;
const url = `${base}/database/1/${container}/production/${subpath}?ckAPIToken=${apiToken}&ckWebAuthToken=${session}`;
fetch(url, method === "GET" ? {} : {method: "POST", headers: {"Content-Type": "text/plain"}, body: JSON.stringify(body || {})})
  .then(async (response) => done({status: response.status, next: response.headers.get("X-Apple-CloudKit-Web-Auth-Token"),
                                   body: await response.json().catch(() => null)}))
  .catch((error) => done({status: 0, body: String(error)}));
"""


def page_call(driver, subpath, body, session, method="POST"):
    """A request the page makes (fetch, text/plain as CloudKit JS sends it)."""
    return driver.execute_async_script(PAGE_CALL, base, container, popup_api_token, subpath, body, session, method)


alice.modify("public", {"zoneName": "_defaultZone"}, [{"operationType": "create", "record": {
    "recordType": "Notice", "recordName": "open-day", "fields": {"text": {"value": "Open day on Saturday"}}}}])
page = console.browser()
try:
    page.get(f"http://127.0.0.1:{app_port}/")
    app_window = page.current_window_handle
    signed_out = page_call(page, "public/records/query", {"zoneID": {"zoneName": "_defaultZone"}, "query": {"recordType": "Notice"}}, None)
    check(signed_out["status"] == 200 and [r["recordName"] for r in signed_out["body"]["records"]] == ["open-day"],
          f"a signed-out public read (ckWebAuthToken=null): {signed_out}")
    denied = page_call(page, "private/users/current", None, None, method="GET")
    check(denied["status"] == 421 and denied["body"].get("redirectURL"), f"signed out, users/current: {denied}")
    page.execute_script("signIn(arguments[0])", denied["body"]["redirectURL"])
    console.wait(page, lambda d: len(d.window_handles) == 2, "the sign-in window of the page")
    page.switch_to.window([h for h in page.window_handles if h != app_window][0])
    console.sign_in(page, bob_token)
    console.click(page, "#web-services-continue", "the Continue button of the sign-in page")
    page.switch_to.window(app_window)
    session = console.wait(page, lambda d: (t := d.find_element(console.By.ID, "token").text) != "waiting" and t, "the ckSession posted to the page")
    me = page_call(page, "private/users/current", None, session, method="GET")
    check(me["status"] == 200 and me["body"]["userRecordName"] == seen["bob_user"]["userRecordName"], f"users/current with the session: {me}")
    # The answer's X-Apple-CloudKit-Web-Auth-Token, readable from the page's
    # origin (Access-Control-Expose-Headers), as CloudKit JS reads it and
    # keeps it: the session again while it is younger than the rotation age,
    # a new one after.
    check(isinstance(me["next"], str) and len(me["next"]) == 128 and me["next"][:16] == session[:16],
          f"the answer hands the token to send next in X-Apple-CloudKit-Web-Auth-Token: {me.get('next')!r}")
    session = me["next"]
    # Private zones and a sync.
    made = page_call(page, "private/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Notes"}}}]}, session)
    check(made["status"] == 200, f"zones/modify: {made}")
    page_call(page, "private/records/modify", {"zoneID": {"zoneName": "Notes"}, "operations": [{"operationType": "create", "record": {
        "recordType": "Note", "recordName": "first", "fields": {"text": {"value": "from the page"}}}}]}, session)
    synced = page_call(page, "private/changes/zone", {"zones": [{"zoneID": {"zoneName": "Notes"}}]}, session)
    check(synced["status"] == 200 and [r["recordName"] for r in synced["body"]["zones"][0]["records"]] == ["first"], f"changes/zone: {synced}")
    # registerForNotifications.
    courier = page_call(page, "tokens/create", {"apnsEnvironment": "production"}, session)
    check(courier["status"] == 200 and courier["body"].get("webcourierURL"), f"tokens/create: {courier}")
    registered = page_call(page, "tokens/register", {"apnsEnvironment": "production", "apnsToken": courier["body"]["apnsToken"]}, session)
    check(registered["status"] == 200, f"tokens/register: {registered}")
    subscribed = page_call(page, "private/subscriptions/modify", {"operations": [{"operationType": "create", "subscription": {
        "subscriptionID": "notes", "subscriptionType": "zone", "zoneID": {"zoneName": "Notes"}}}]}, session)
    check(subscribed["status"] == 200 and not subscribed["body"]["subscriptions"][0].get("serverErrorCode"), f"subscriptions/modify: {subscribed}")
    # The page long-polls while another device of bob's changes the zone.
    page.execute_script("""
        window.notice = null;
        const poll = () => fetch(arguments[0]).then((r) => r.status === 204 ? poll() : r.json().then((j) => { window.notice = j; }));
        poll().catch((e) => { window.notice = {failed: String(e)}; });
    """, courier["body"]["webcourierURL"])
    bob_device = CloudKit(base, container, "production", popup_api_token, session)
    bob_device.modify("private", {"zoneName": "Notes"}, [{"operationType": "create", "record": {
        "recordType": "Note", "recordName": "second", "fields": {"text": {"value": "from another device"}}}}])
    notice = console.wait(page, lambda d: d.execute_script("return window.notice"), "the notification the page long-polled for", 60)
    check(notice.get("ck", {}).get("fet", {}).get("sid") == "notes", f"the notification: {notice}")
    console.step(page, "cloudkit-js-page-notified")
    seen["page_notice"] = notice["ck"]["fet"]["sid"]
finally:
    page.quit()

print(json.dumps(seen, sort_keys=True))
