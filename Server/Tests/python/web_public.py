"""The console's public database (issue 36) in a real browser.

Headless Chromium (Debian's chromium and chromium-driver, driven by
Selenium) against a live `canopy serve` whose schema declares `Post`
(CloudKit's default grants: everyone reads, signed-in users create, the
creator writes) and `Notice` (everyone reads; only the role Moderator
creates and writes). Signed in as alice: the Public section, a Post made
from the console, Notice's "New record" greyed; as bob: alice's post read
only; signed out: the same page shows what everyone may read, with
nothing to edit. A screenshot of every step goes to ARTIFACT_DIR.

usage: web_public.py BASE_URL ALICE_TOKEN BOB_TOKEN ARTIFACT_DIR
Exits non-zero, saying which step failed, on any failure.
"""
import json
import os
import sys
import urllib.request

from selenium.webdriver.common.by import By

import console_browser as console

base, alice_token, bob_token, artifacts = sys.argv[1:5]
console.use_artifacts(artifacts)
PUBLIC = "/#/zone/PUBLIC/__defaultOwner__/_defaultZone"


def api(token, query, variables=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(base + "/graphql", data=json.dumps({"query": query, "variables": variables or {}}).encode(), headers=headers)
    answer = json.load(urllib.request.urlopen(request, timeout=30))
    if answer.get("errors"):
        raise AssertionError(f"the API refused {query}: {answer['errors']}")
    return answer["data"]


def save(token, records):
    data = api(token, """mutation($s: [RecordInput!]) { modifyRecords(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, save: $s) {
        saved { recordName } errors { recordName code message } } }""", {"s": records})
    if data["modifyRecords"]["errors"]:
        raise AssertionError(f"not saved: {data['modifyRecords']['errors']}")


def rows(driver):
    return [row.get_attribute("data-record") for row in driver.find_elements(By.CSS_SELECTOR, "#records-table tbody tr")]


def disabled(driver, css):
    return driver.find_element(By.CSS_SELECTOR, css).get_attribute("aria-disabled") == "true"


save(alice_token, [{"recordName": "welcome", "recordType": "Post", "fields": {"title": "Welcome, everyone"}}])

# alice, signed in: the Public section, her post, a post made in the console.
alice = console.browser()
try:
    alice.get(base + "/")
    console.sign_in(alice, alice_token)
    console.visible(alice, "#public-zone", "the Public section on the zones page")
    console.step(alice, "zones-with-public")
    console.click(alice, "#public-zone")
    console.text_appears(alice, "h1", "Public database")
    console.wait(alice, lambda d: "welcome" in rows(d), "alice's post in the public table")
    console.text_appears(alice, "#access-note", "create them")
    if disabled(alice, "#new-record"):
        raise AssertionError("alice may create a Post (_icloud CREATE by default), but New record is greyed")
    console.step(alice, "public-signed-in")
    console.click(alice, "#new-record")
    name = console.visible(alice, "input[name=recordName]", "the new record's form")
    name.clear()
    name.send_keys("from-console")
    console.visible(alice, "input[name=newField]", "the add-field row").send_keys("title")
    console.press(alice, "Add field")
    console.visible(alice, ".field[data-field='title'] .value input", "the title field").send_keys("Made in the console")
    console.step(alice, "public-new-post")
    console.click(alice, "#save-record")
    console.text_appears(alice, "h1", "from-console", "the saved record's page")
    seen = api(None, """{ lookup(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, recordNames: ["from-console"]) {
        record { fields created { userRecordName } } } }""")["lookup"][0]["record"]
    if not seen or seen["fields"].get("title") != "Made in the console":
        raise AssertionError(f"the console's post is not readable without a token: {seen}")
    # Notice: only Moderator creates, so alice's New record is greyed and says why.
    alice.get(base + PUBLIC + "?type=Notice")
    console.text_appears(alice, "#access-note", "not create them")
    if not disabled(alice, "#new-record"):
        raise AssertionError("Notice's grants give alice no CREATE, but New record is not greyed")
    console.step(alice, "public-notice-greyed")
finally:
    alice.quit()

# bob: alice's post is hers to change (WRITE is _creator's): read only for him.
bob = console.browser()
try:
    bob.get(base + "/")
    console.sign_in(bob, bob_token)
    console.visible(bob, "#public-zone")
    bob.get(base + "/#/record/PUBLIC/__defaultOwner__/_defaultZone/welcome")
    console.text_appears(bob, "#read-only-note", "do not let you change")
    if bob.find_element(By.ID, "save-record").is_displayed():
        raise AssertionError("bob sees a Save button on alice's post")
    console.step(bob, "public-read-only-for-bob")
finally:
    bob.quit()

# Signed out: the sign-in page offers the public database, which shows what everyone may read.
nobody = console.browser()
try:
    nobody.get(base + "/")
    console.visible(nobody, "input[name=token]", "the sign-in form")
    console.click(nobody, "#browse-public")
    console.wait(nobody, lambda d: {"welcome", "from-console"} <= set(rows(d)), "the posts, signed out")
    console.text_appears(nobody, "#access-note", "Signed out")
    if not disabled(nobody, "#new-record"):
        raise AssertionError("signed out, New record is not greyed")
    console.visible(nobody, "#sign-in-link", "a Sign in link in the header")
    console.step(nobody, "public-signed-out")
    console.click(nobody, "a[href$='/welcome']", "alice's post, signed out")
    console.text_appears(nobody, "#read-only-note", "sign in to change")
    console.step(nobody, "public-record-signed-out")
    if any("Bearer" in (entry.get("message") or "") for entry in nobody.get_log("browser")):
        raise AssertionError("a token appeared in the signed-out page's log")
finally:
    nobody.quit()

print("the public database in the console: every step passed", flush=True)
