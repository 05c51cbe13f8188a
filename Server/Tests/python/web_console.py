"""The web console's whole story in a real browser (issue 17, docs/API.md §12).

Headless Chromium (Debian's chromium and chromium-driver, driven by
Selenium) against a live `canopy serve`, in two browser sessions (two
people, as two windows): the owner signs in, makes a zone and records,
shares it, invites a second person read-only and turns the public link on;
the second person opens the invitation, signs in, accepts and sees the
records, cannot edit them (the controls say so and the API refuses) and sees
the owner's edit without reloading; a save that crosses another is shown as
a conflict; a stranger opening a private share's URL learns nothing; the
owner removes the second person, whose console loses the zone on its next
request; the owner stops sharing. A screenshot of every step goes to
ARTIFACT_DIR.

usage: web_console.py BASE_URL OWNER_TOKEN INVITEE_TOKEN STRANGER_TOKEN ARTIFACT_DIR
The invitee's account has the email invitee@example.com. Exits non-zero,
saying which step failed, on any failure.
"""
import json
import os
import struct
import sys
import urllib.request
import zlib

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

import console_browser
from console_browser import browser, click, clickable, press, sign_in, step, text_appears, visible, wait

base, owner_token, invitee_token, stranger_token, artifacts = sys.argv[1:6]
console_browser.use_artifacts(artifacts)
ZONE = "Trip"
TITLE = "Trip to Lisbon"


def graphql(driver, query, variables):
    """A call from the page itself (its origin, its token): what the API answers this person."""
    return driver.execute_async_script("""
        const [query, variables, done] = arguments;
        const token = sessionStorage.getItem("canopy.token") ?? localStorage.getItem("canopy.token");
        fetch("/graphql", {method: "POST", headers: {"Content-Type": "application/json", "Authorization": "Bearer " + token},
                           body: JSON.stringify({query, variables})}).then(r => r.json()).then(done, e => done({error: String(e)}));
    """, query, variables)


def api(token, query, variables):
    """A second, independent client: Python's standard library over HTTP."""
    request = urllib.request.Request(f"{base}/graphql", data=json.dumps({"query": query, "variables": variables}).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request))


def png(path, width=160, height=100):
    """A small real PNG (red and green stripes), written with the standard library."""
    rows = b"".join(b"\x00" + b"".join(bytes((200, 30, 30) if (x // 20) % 2 else (30, 140, 60)) for x in range(width)) for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    with open(path, "wb") as file:
        file.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                   + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return path


def image_loaded(driver, css):
    return driver.execute_script(f"const i = document.querySelector({json.dumps(css)}); return Boolean(i && i.complete && i.naturalWidth > 0)")


def new_record(driver, name, fields):
    press(driver, "New record")
    record_type = visible(driver, "input[name=recordType]")
    if not record_type.get_attribute("value"):
        record_type.send_keys("Place")
    record_name = driver.find_element(By.CSS_SELECTOR, "input[name=recordName]")
    record_name.clear()
    record_name.send_keys(name)
    for field, kind, value in fields:
        existing = driver.find_elements(By.CSS_SELECTOR, f".field[data-field='{field}'] .value input")
        if not existing:
            driver.find_element(By.CSS_SELECTOR, "input[name=newField]").send_keys(field)
            Select(driver.find_element(By.CSS_SELECTOR, "select[name=newType]")).select_by_value(kind)
            press(driver, "Add field")
            existing = driver.find_elements(By.CSS_SELECTOR, f".field[data-field='{field}'] .value input")
        existing[0].clear()
        existing[0].send_keys(value)
    press(driver, "Create record")
    text_appears(driver, "h1", name)


owner = browser()
invitee = browser()
try:
    # 1. The owner signs in and makes a zone with two records.
    owner.get(base + "/")
    sign_in(owner, owner_token)
    visible(owner, "#private-zones", "the zones list")
    step(owner, "owner-signed-in")
    owner.find_element(By.CSS_SELECTOR, "input[name=zoneName]").send_keys(ZONE)
    press(owner, "Create zone")
    text_appears(owner, "h1", ZONE)
    new_record(owner, "lisbon", [("city", "STRING", "Lisbon"), ("nights", "INT64", "4")])
    step(owner, "owner-made-a-record")
    owner.find_element(By.LINK_TEXT, ZONE).click()
    new_record(owner, "porto", [("city", "STRING", "Porto"), ("nights", "INT64", "2")])
    owner.find_element(By.LINK_TEXT, ZONE).click()
    visible(owner, "#records-table", "the records table")
    rows = owner.find_elements(By.CSS_SELECTOR, "#records-table tbody tr")
    assert len(rows) == 2, f"the owner sees two records, not {len(rows)}"
    # An asset: a picture uploaded from the record's page, shown as an image.
    owner.find_element(By.LINK_TEXT, "lisbon").click()
    visible(owner, "input[name=newField]").send_keys("photo")
    Select(owner.find_element(By.CSS_SELECTOR, "select[name=newType]")).select_by_value("ASSET")
    press(owner, "Add field")
    visible(owner, ".field[data-field=photo] input[type=file]").send_keys(png(os.path.join(artifacts, "photo.png")))
    text_appears(owner, ".field[data-field=photo]", "uploaded", "the upload")
    click(owner, "#save-record")
    wait(owner, lambda d: image_loaded(d, ".field[data-field=photo] img"), "the picture, shown from its download URL")
    step(owner, "owner-record-with-picture")
    owner.find_element(By.LINK_TEXT, ZONE).click()
    visible(owner, "#records-table")
    wait(owner, lambda d: image_loaded(d, "#records-table img"), "the picture in the records table")
    step(owner, "owner-zone")
    # Filtered and sorted, as CKQuery.
    filter_box = owner.find_element(By.CSS_SELECTOR, "input[name=filter]")
    filter_box.send_keys("nights > 3")
    press(owner, "Show")
    wait(owner, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#records-table tbody tr")) == 1, "the filter to leave one record")
    step(owner, "owner-filtered-records")
    filter_box = owner.find_element(By.CSS_SELECTOR, "input[name=filter]")
    filter_box.clear()
    filter_box.send_keys("nights >")
    press(owner, "Show")
    visible(owner, ".message.error", "the filter's error")
    assert owner.find_element(By.CSS_SELECTOR, "input[name=filter]").get_attribute("aria-invalid") == "true"
    step(owner, "owner-bad-filter")
    owner.find_element(By.CSS_SELECTOR, "input[name=filter]").clear()
    press(owner, "Show")
    wait(owner, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#records-table tbody tr")) == 2, "both records again")
    # Sorted by a field, both ways.
    first_row = "return document.querySelector('#records-table tbody tr')?.dataset.record"
    for direction, first in (("DESC", "lisbon"), ("ASC", "porto")):
        Select(visible(owner, "select[name=sort]")).select_by_value("nights")
        Select(owner.find_element(By.CSS_SELECTOR, "select[name=direction]")).select_by_value(direction)
        press(owner, "Show")
        wait(owner, lambda d: f"sort=nights%3A{direction}" in d.current_url and d.execute_script(first_row) == first,
             f"{first} first, by nights {direction}")

    # 2. The sharing sheet: share, invite read-only, public link on.
    click(owner, "#share-zone")
    visible(owner, "#sharing-sheet", "the sharing sheet")
    title = visible(owner, "#sharing-sheet input[name=title]")
    title.send_keys(TITLE)
    click(owner, "#start-sharing")
    visible(owner, "#invite", "the invite form")
    owner.find_element(By.CSS_SELECTOR, "#invite input[name=contact]").send_keys("invitee@example.com")
    Select(owner.find_element(By.CSS_SELECTOR, "#invite select")).select_by_value("READ_ONLY")
    press(owner, "Invite", "dialog")
    text_appears(owner, "#participants", "invitee", "the invitation in the people list")
    Select(visible(owner, "#public-permission")).select_by_value("READ_ONLY")
    wait(owner, lambda d: d.execute_script("return document.getElementById('public-permission')?.value") == "READ_ONLY"
         and "Anyone with the link can open it now" in d.execute_script("return document.getElementById('announcer').textContent"), "the public link to turn on")
    share_url = owner.execute_script("return document.getElementById('share-link').value")
    assert share_url.startswith(base + "/share/"), share_url
    click(owner, "#copy-link")
    step(owner, "owner-sharing-sheet")
    click(owner, "#sheet-done")

    # 3. The invitee opens the link, signs in, accepts, sees the records.
    invitee.get(share_url)
    text_appears(invitee, "#share-title", TITLE, "the public share's title before signing in")
    step(invitee, "invitation-signed-out")
    sign_in(invitee, invitee_token)
    accept = clickable(invitee, "#accept-share", "the Accept button")
    assert "can view" in invitee.find_element(By.ID, "share-summary").text, invitee.find_element(By.ID, "share-summary").text
    assert "alice" in invitee.find_element(By.ID, "share-summary").text.lower(), "the owner's name is shown"
    step(invitee, "invitation-signed-in")
    accept.click()
    visible(invitee, "#records-table", "the shared zone's records after accepting")
    wait(invitee, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#records-table tbody tr")) == 2, "both records for the invitee")
    assert "read only" in invitee.find_element(By.ID, "access-note").text
    step(invitee, "invitee-sees-shared-zone")

    # 4. Read only: the controls say so, and the API refuses.
    invitee.find_element(By.LINK_TEXT, "lisbon").click()
    visible(invitee, "#read-only-note", "the read-only note")
    inputs = invitee.find_elements(By.CSS_SELECTOR, "#fields input")
    assert inputs and all(not field.is_enabled() for field in inputs), "every field is disabled"
    wait(invitee, lambda d: image_loaded(d, ".field[data-field=photo] img"), "the picture for the invitee")
    assert not invitee.find_element(By.ID, "save-record").is_displayed(), "no Save button"
    step(invitee, "invitee-read-only-record")
    zone_id = {"zoneName": ZONE, "ownerName": graphql(owner, "{ me { userRecordName } }", {})["data"]["me"]["userRecordName"]}
    refused = graphql(invitee, "mutation($zone: ZoneID!) { modifyRecords(scope: SHARED, zone: $zone, save: [{recordName: \"lisbon\", recordType: \"Place\", fields: {city: \"Faro\"}}], savePolicy: ALL_KEYS) { errors { code } } }", {"zone": zone_id})
    codes = [error["code"] for error in refused["data"]["modifyRecords"]["errors"]]
    assert codes == ["PERMISSION_FAILURE"], f"the API refuses the invitee's save: {refused}"

    # 5. Live: the owner's edit appears in the invitee's console without a reload.
    invitee.find_element(By.LINK_TEXT, ZONE).click()
    visible(invitee, "#records-table")
    invitee.execute_script("document.body.dataset.sameDocument = 'yes'")
    owner.find_element(By.LINK_TEXT, "lisbon").click()
    city = visible(owner, ".field[data-field=city] input")
    city.clear()
    city.send_keys("Lisboa")
    click(owner, "#save-record")
    visible(owner, "#record-feedback .message.notice", "the owner's save")
    text_appears(invitee, "#records-table", "Lisboa", "the owner's edit in the invitee's console")
    assert invitee.execute_script("return document.body.dataset.sameDocument") == "yes", "no reload happened"
    step(invitee, "invitee-sees-live-edit")

    # 6. A save that crosses another is a conflict, shown as such.
    visible(owner, ".field[data-field=nights] input").clear()
    owner.find_element(By.CSS_SELECTOR, ".field[data-field=nights] input").send_keys("5")
    lisbon = api(owner_token, "query($zone: ZoneID!) { lookup(scope: PRIVATE, zone: $zone, recordNames: [\"lisbon\"]) { record { recordChangeTag fields } } }", {"zone": zone_id})
    record = lisbon["data"]["lookup"][0]["record"]
    changed = api(owner_token, "mutation($zone: ZoneID!, $r: RecordInput!) { modifyRecords(scope: PRIVATE, zone: $zone, save: [$r]) { errors { code } } }",
                  {"zone": zone_id, "r": {"recordName": "lisbon", "recordType": "Place", "fields": {**record["fields"], "nights": 6}, "recordChangeTag": record["recordChangeTag"]}})
    assert changed["data"]["modifyRecords"]["errors"] == [], changed
    visible(owner, "#record-feedback .message.notice", "the notice that the record changed elsewhere")
    click(owner, "#save-record")
    conflict = visible(owner, "#conflict", "the conflict")
    assert "changed elsewhere" in conflict.text and "6" in conflict.text and "5" in conflict.text, conflict.text
    step(owner, "owner-conflict")
    click(owner, "#keep-mine")
    text_appears(owner, "#record-feedback", "Saved", "the resolved save")
    assert visible(owner, ".field[data-field=nights] input").get_attribute("value") == "5"

    # 7. A stranger opening a private share's URL learns nothing.
    click(owner, "nav.crumbs a:nth-of-type(2)")
    click(owner, "#share-zone")
    Select(visible(owner, "#public-permission")).select_by_value("NONE")
    wait(owner, lambda d: "only invited" in d.execute_script("return document.getElementById('announcer').textContent").lower(), "the link to turn off")
    click(owner, "#sheet-done")
    stranger = browser()
    try:
        stranger.get(share_url)
        visible(stranger, "input[name=token]", "the sign-in form on a private share's page")
        page = stranger.find_element(By.TAG_NAME, "body").text
        for secret in (TITLE, "Lisbon", ZONE, "alice"):
            assert secret.lower() not in page.lower(), f"a private share's page shows '{secret}' to a stranger: {page!r}"
        step(stranger, "stranger-signed-out")
        sign_in(stranger, stranger_token)
        text_appears(stranger, "#invitation-actions", "does not lead to anything shared with", "the stranger's refusal")
        page = stranger.find_element(By.TAG_NAME, "body").text
        for secret in (TITLE, "Lisbon", ZONE, "alice"):
            assert secret.lower() not in page.lower(), f"a private share's page shows '{secret}' to a signed-in stranger: {page!r}"
        assert not stranger.find_elements(By.ID, "accept-share"), "no Accept for a stranger"
        step(stranger, "stranger-signed-in")
    finally:
        stranger.quit()

    # 8. The invitee's side of the share: the owner, their own permission, Leave.
    click(invitee, "#share-zone")
    visible(invitee, "#leave-share", "the participant's Leave share")
    people = visible(invitee, "#participants").text
    assert "alice" in people and "owner" in people and "you" in people, people
    assert "Can view" in people, people
    assert not invitee.find_elements(By.CSS_SELECTOR, "#invite, #public-permission, #stop-sharing"), "a participant cannot manage the share"
    step(invitee, "invitee-sharing-sheet")
    invitee.find_element(By.CSS_SELECTOR, "#sharing-sheet").send_keys(Keys.ESCAPE)   # the keyboard closes the sheet
    wait(invitee, lambda d: not d.find_elements(By.ID, "sharing-sheet"), "Escape to close the sheet")

    # 9. The owner removes the invitee; the invitee's console loses the zone on its next request.
    click(owner, "#share-zone")
    remove = clickable(owner, "#participants button[aria-label^='Remove']", "the Remove button")
    step(owner, "owner-before-removing")
    remove.click()
    wait(owner, lambda d: "Nobody yet" in d.execute_script("return document.getElementById('participants')?.textContent ?? ''"),
         "the invitee to leave the people list")
    click(owner, "#sheet-done")
    invitee.find_element(By.CSS_SELECTOR, "header a.brand").click()
    visible(invitee, "#shared-zones")
    wait(invitee, lambda d: TITLE not in d.find_element(By.ID, "shared-zones").text, "the zone to leave the invitee's list")
    invitee.back()
    text_appears(invitee, "main", "no longer shared with you", "the zone page to say it is gone")
    step(invitee, "invitee-lost-the-zone")

    # 10. The owner stops sharing; the zone is private again.
    click(owner, "#share-zone")
    click(owner, "#stop-sharing")
    owner.switch_to.alert.accept()
    visible(owner, "#start-sharing", "the sheet of an unshared zone")
    step(owner, "owner-stopped-sharing")
    click(owner, "#sheet-done")

    # 11. A record's hierarchy shared read-only: the sheet on the record, the
    #     invitation opens the record, which is read only for the invitee.
    owner.find_element(By.LINK_TEXT, "porto").click()
    click(owner, "#share-record")
    visible(owner, "#sharing-sheet input[name=title]").send_keys("Porto notes")
    click(owner, "#start-sharing")
    visible(owner, "#invite input[name=contact]").send_keys("invitee@example.com")
    press(owner, "Invite", "dialog")
    text_appears(owner, "#participants", "invitee", "the record's invitation")
    record_url = owner.execute_script("return document.getElementById('share-link').value")
    step(owner, "owner-record-sharing-sheet")
    click(owner, "#sheet-done")
    invitee.get(record_url)
    click(invitee, "#accept-share", "Accept for the record")
    visible(invitee, "#read-only-note", "the shared record, read only")
    assert "porto" in invitee.find_element(By.TAG_NAME, "h1").text
    assert all(not field.is_enabled() for field in invitee.find_elements(By.CSS_SELECTOR, "#fields input"))
    click(invitee, "#share-record", "the participant's Sharing… on the shared record")
    visible(invitee, "#leave-share", "Leave share on the record's sheet")
    step(invitee, "invitee-shared-record")
    click(invitee, "#sheet-done")

    # 12. Access requests (issue 38): a zone shared with requests allowed; a
    #     stranger asks from the link, the owner approves from the sheet, the
    #     stranger opens the zone; the sheet's activity shows it all.
    owner.find_element(By.CSS_SELECTOR, "header a.brand").click()
    visible(owner, "input[name=zoneName]").send_keys("Plans")
    press(owner, "Create zone")
    text_appears(owner, "h1", "Plans")
    click(owner, "#share-zone")
    visible(owner, "#sharing-sheet input[name=title]").send_keys("Summer plans")
    click(owner, "#start-sharing")
    click(owner, "#allow-requests", "the Allow access requests box")
    wait(owner, lambda d: "may now ask" in d.execute_script("return document.getElementById('announcer').textContent"), "requests to be allowed")
    plans_url = owner.execute_script("return document.getElementById('share-link').value")
    click(owner, "#sheet-done")
    requester = browser()
    try:
        requester.get(plans_url)
        sign_in(requester, stranger_token)
        click(requester, "#request-access", "Request access")
        text_appears(requester, "#request-sent", "You asked", "the request to be sent")
        step(requester, "requester-asked")
        click(owner, "#share-zone")
        pending = visible(owner, "#pending-requests", "the pending request in the sheet")
        assert "carol" in pending.text.lower(), pending.text
        owner.execute_script("document.getElementById('access-requests').scrollIntoView()")
        step(owner, "owner-sheet-access-requests")
        click(owner, "#pending-requests button[aria-label^='Approve']", "Approve")
        wait(owner, lambda d: "asked and was approved" in d.execute_script("return document.getElementById('participants')?.textContent ?? ''"),
             "the requester in the people list")
        text_appears(owner, "#activity-list", "asked for access", "the request in the activity")
        activity = owner.find_element(By.ID, "activity-list").text
        assert "approved the request of" in activity and "shared it" in activity, activity
        owner.execute_script("document.getElementById('activity').scrollIntoView()")
        step(owner, "owner-sheet-activity")
        click(owner, "#sheet-done")
        requester.get(plans_url)
        click(requester, "#open-share", "Open, once approved")
        text_appears(requester, "main", "Shared with you by alice", "the zone, open to the approved requester")
        step(requester, "requester-opened-zone")
    finally:
        requester.quit()

    # 13. Move to…: lisbon (with its picture) goes from Trip to Plans, keeping its name.
    owner.find_element(By.CSS_SELECTOR, "header a.brand").click()
    wait(owner, lambda d: d.find_elements(By.LINK_TEXT, ZONE), "the zone list")
    owner.find_element(By.LINK_TEXT, ZONE).click()
    visible(owner, "#records-table")
    click(owner, "#records-table a[href$='/lisbon']", "lisbon in Trip")
    click(owner, "#move-record", "Move to…")
    Select(visible(owner, "#move-target")).select_by_visible_text("Plans")
    step(owner, "owner-move-dialog")
    click(owner, "#move-go")
    wait(owner, lambda d: "/Plans/lisbon" in d.current_url, "the record's page in Plans")
    text_appears(owner, "nav.crumbs", "Plans", "the record now in Plans")
    wait(owner, lambda d: image_loaded(d, ".field[data-field=photo] img"), "the picture moved with the record")
    step(owner, "owner-moved-record")

    # 14. A phone's width: the same console, one column.
    owner.find_element(By.CSS_SELECTOR, "header a.brand").click()
    wait(owner, lambda d: d.find_elements(By.LINK_TEXT, ZONE), "the zone list")
    owner.find_element(By.LINK_TEXT, ZONE).click()
    visible(owner, "#records-table")
    owner.set_window_size(390, 844)
    owner.refresh()
    visible(owner, "#records-table")
    assert owner.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1"), "no sideways scrolling on a phone"
    step(owner, "owner-phone-width")
    print(json.dumps({"steps": console_browser.step_number, "shareURL": share_url}))
finally:
    owner.quit()
    invitee.quit()
