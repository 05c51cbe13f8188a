"""The example web app (Server/Examples/TodoWeb, issue 40) in a real browser.

Headless Chromium (Debian's chromium and chromium-driver, driven by
Selenium), two people in two browser sessions, against a live `canopy
serve` started with --cors-origin APP_URL, the app served from APP_URL (any
static server; another origin than the gateway's):

0. The sign-in page, signed out: the server's provider offered;
1. Alice signs in with the provider (identity_provider.py: the code flow
   with PKCE, a real signed id token), sees the empty states, creates a
   list, adds, renames and deletes items, shares the list with Bob's email
   (can edit), and copies the share link with the sheet's Copy button;
2. Bob signs in with the provider, opens the link under "Shared with me"
   and sees the items and whose list it is; Alice's sheet then shows him
   as joined;
3. Alice adds an item and Bob sees it appear without a reload; Bob ticks
   one and Alice sees it the same way;
4. Bob goes offline (Chrome's network emulation: navigator.onLine false,
   every request fails, and the open WebSocket carries nothing until the
   network is back, all checked). Meanwhile Alice adds an item and renames
   one; Bob ticks that one (under its old title) and adds another, which
   show at once and wait in his queue. His sends are refused by the
   network, the server has none of them, and he has received nothing;
5. Bob is back online: Alice sees both his changes arrive, Bob sees hers,
   and the item they both changed has her title and his tick (last writer
   wins, field by field);
6. Both pages registered the service worker (sw.js);
7. Bob renames an item offline and closes the page (its tab, until Chromium holds
   nothing of it); opened again online,
   the app starts signed in (the session kept), from its copy and queue
   in IndexedDB, and sends the rename, which Alice sees;
8. Bob's gateway goes away for 70 seconds, longer than every retry (Bob's
   page reaches the gateway through a TCP proxy on loopback that this
   script runs; it refuses and cuts every connection, as a crashed gateway
   would, while the browser's network stays up). He ticks an item: his page
   says "Waiting for the server", never "Online", and shows no error. He
   reloads the page with the gateway away: the service worker answers
   CanopyJS (imported from the gateway) from its cache, and the app opens
   signed in from the kept session, with his list and the tick waiting. The
   gateway back, with nobody touching the page, the tick is sent by itself,
   Alice sees it, and Bob's page says "Online" and "up to date".

A screenshot of every step goes to ARTIFACT_DIR.

usage: todo_web_story.py GATEWAY_URL APP_URL PROVIDER_CONTROL_URL BOB_EMAIL ARTIFACT_DIR
Exits non-zero, saying which step failed, on any failure.
"""
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.common.exceptions import WebDriverException

import console_browser
from console_browser import click, click_when, text_appears, visible, wait

gateway, app_url, provider_control, bob_email, artifacts = sys.argv[1:6]
gateway = gateway.rstrip("/")
app_origin = app_url.rstrip("/")
ISSUER = "https://idp.canopy.test"
console_browser.use_artifacts(artifacts)
LIST = "Groceries"
step_number = 0


def browser():
    """console_browser's headless Chromium, with the network log (to see what the page sent and received)."""
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1200,900", "--lang=en-US"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(20)
    return driver


def step(driver, name, offline=False, away=False):
    """A screenshot; fails if the page logged an error or shows one (offline,
    or with the gateway away, failed connections are expected)."""
    global step_number
    step_number += 1
    path = os.path.join(artifacts, f"{step_number:02d}-{name}.png")
    driver.save_screenshot(path)
    print(f"step {step_number:02d} {name}: {path}", flush=True)
    expected = ("favicon", "Failed to load resource") + (("ERR_INTERNET_DISCONNECTED",) if offline else ()) \
        + (("ERR_CONNECTION_RESET", "ERR_EMPTY_RESPONSE", "ERR_CONNECTION_REFUSED", "WebSocket connection to", "net::ERR_") if away else ())
    problems = [entry["message"] for entry in driver.get_log("browser")
                if entry["level"] == "SEVERE" and not any(words in entry["message"] for words in expected)]
    if problems:
        raise AssertionError(f"{name}: the page logged errors: {problems}")
    message = driver.find_element(By.ID, "message")
    if message.is_displayed():
        raise AssertionError(f"{name}: the page shows an error: {message.text!r}")


def close_for_good(driver):
    """Closes the page's tab (a new one, online, takes its place) and waits until
    Chromium holds no page of the app any more. A page only navigated away from
    can live on for a moment (or in the back/forward cache) and, once the
    network is back, send what it had queued: the page must be gone first."""
    old = driver.current_window_handle
    driver.switch_to.new_window("tab")
    fresh = driver.current_window_handle
    driver.switch_to.window(old)
    driver.close()
    driver.switch_to.window(fresh)
    def app_pages(d):
        targets = d.execute_cdp_cmd("Target.getTargets", {})["targetInfos"]
        return [target["url"] for target in targets if target["type"] == "page" and target["url"].startswith(app_origin)]
    wait(driver, lambda d: old not in d.window_handles and not app_pages(d), "the closed page to be gone from Chromium", 30)
    try:
        driver.delete_network_conditions()
    except WebDriverException:
        pass  # chromedriver set the conditions on the closed tab only
    assert driver.execute_script("return navigator.onLine") is True, "the new tab is online"


class GatewayProxy:
    """A TCP proxy on loopback to the gateway, which can be taken away:
    while away it cuts the connections it carries and resets every new one
    at once (what a page sees of a gateway that crashed)."""

    def __init__(self, target):
        parsed = urllib.parse.urlparse(target)
        self.target = (parsed.hostname, parsed.port)
        assert parsed.hostname in ("127.0.0.1", "localhost", "::1"), f"the proxy forwards to loopback only, not {parsed.hostname}"
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.away = False
        self.lock = threading.Lock()
        self.open = set()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            client, _ = self.listener.accept()
            if self.away:
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                client.close()
                continue
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self.pipe, args=(source, sink), daemon=True).start()

    def pipe(self, source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def go_away(self):
        self.away = True
        with self.lock:
            for end in self.open:
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.open.clear()

    def come_back(self):
        self.away = False


def api(token, query, variables=None):
    """A second, independent client: Python's standard library over HTTP."""
    request = urllib.request.Request(f"{gateway}/graphql", data=json.dumps({"query": query, "variables": variables or {}}).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    body = json.load(urllib.request.urlopen(request))
    if body.get("errors"):
        raise AssertionError(f"the API refused {query[:60]}…: {body['errors']}")
    return body["data"]


def server_items(zone):
    """The list's items on the server, as Alice reads them: {title: done}."""
    records = api(alice_token, "query($zone: ZoneID!) { records(scope: PRIVATE, zone: $zone, recordType: \"Item\", limit: 100) { records { fields } } }",
                  {"zone": zone})["records"]["records"]
    for record in records:
        fields = record["fields"]
        assert isinstance(fields.get("title"), str) and isinstance(fields.get("done"), bool) and isinstance(fields.get("position"), (int, float)), \
            f"an Item is {{title: string, done: boolean, position: number}}, not {fields}"
    return {record["fields"]["title"]: record["fields"]["done"] for record in records}


def items(driver):
    """The shown list's rows, in order: [(title, done)] (titles are inputs, so read their values)."""
    return [tuple(row) for row in driver.execute_script(
        "return [...document.querySelectorAll('#items li')].map((row) => [row.querySelector('.title').value, row.querySelector('input[type=checkbox]').checked])")]


def shows(driver, expected, what, seconds=15):
    """Waits until the rows are `expected` ([(title, done)]) in that order."""
    try:
        wait(driver, lambda d: items(d) == expected, what, seconds)
    except AssertionError as error:
        raise AssertionError(f"{error}\nrows shown: {items(driver)}, expected: {expected}") from None


def status(driver):
    element = driver.find_element(By.ID, "status")
    return element.get_attribute("data-online"), int(element.get_attribute("data-pending") or -1), element.text


def connection(driver):
    """What the status line says of the server: online, waiting or offline."""
    return driver.find_element(By.ID, "status").get_attribute("data-connection")


def sent_everything(driver, what):
    wait(driver, lambda d: status(d)[1] == 0, f"{what}: nothing left in the queue", 15)


def click_in_row(driver, title, css, what):
    """Clicks `css` in the row titled `title`, again if the list was drawn anew meanwhile."""
    click_when(driver, lambda d: row(d, title).find_element(By.CSS_SELECTOR, css), what)


def row(driver, title):
    """The row whose title is `title`."""
    for candidate in driver.find_elements(By.CSS_SELECTOR, "#items li"):
        if candidate.find_element(By.CSS_SELECTOR, ".title").get_attribute("value") == title:
            return candidate
    raise AssertionError(f"no row '{title}' in {items(driver)}")


def add_item(driver, title):
    field = visible(driver, "#new-item input[name=title]", "the new item's field")
    field.send_keys(title + Keys.ENTER)


def provider_signs_in(subject, name, email):
    """Who the test provider signs in at its next /authorize."""
    claims = {"iss": ISSUER, "sub": subject, "email": email, "email_verified": True, "name": name}
    request = urllib.request.Request(f"{provider_control}/sign-in-as", data=json.dumps({"claims": claims}).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()


def use_gateway(driver, url):
    """The sign-in page's Server setting (the app remembers it)."""
    # Opened already when the default server did not answer.
    if not driver.find_element(By.ID, "server-setting").get_attribute("open"):
        click(driver, "#server-setting summary", "the Server setting")
    field = visible(driver, "#gateway-form input[name=gateway]", "the server's address")
    field.clear()
    field.send_keys(url + Keys.ENTER)
    text_appears(driver, "#gateway-shown", url, "the server in use")
    wait(driver, lambda d: not d.find_element(By.ID, "message").is_displayed(), "the page to load CanopyJS from the server")


def sign_in(driver, subject, name, email, via=None, screenshot=None):
    """Signs in with the server's provider, as a person would: the button, the provider, back."""
    driver.get(app_url)
    visible(driver, "#sign-in", "the sign-in page")
    use_gateway(driver, via or gateway)
    # The page may draw the providers' buttons again (once for the server it
    # opened with, once for the one set): find the button at each use.
    button = "#providers button[data-provider=idp]"
    text_appears(driver, button, "Sign in with Test IdP", "the provider's button")
    if screenshot:
        step(driver, screenshot)
    provider_signs_in(subject, name, email)
    click(driver, button, "the provider's button")
    visible(driver, "#app", "the lists after signing in with the provider")
    assert "code=" not in driver.current_url, f"the code left the address bar: {driver.current_url}"
    text_appears(driver, "#who", name, "who is signed in")


def token_of(driver, via=None):
    """The Canopy token the page's session holds (to check the server with it)."""
    raw = driver.execute_script("return localStorage.getItem(arguments[0])", f"canopy.session:{via or gateway}")
    assert raw, "the session is kept in localStorage"
    return json.loads(raw)["token"]


def stored_queue(driver, database_name):
    """The pending record changes a SyncedDatabase keeps in IndexedDB."""
    return driver.execute_async_script("""const [name, done] = arguments;
        const request = indexedDB.open(name);
        request.onerror = () => done(null);
        request.onsuccess = () => {
          const get = request.result.transaction("meta").objectStore("meta").get("meta");
          get.onsuccess = () => { done(get.result?.state?.pendingRecordChanges ?? null); request.result.close(); };
          get.onerror = () => done(null);
        };""", database_name)


def open_list(driver, scope):
    click(driver, f"{'#own-lists' if scope == 'own' else '#shared-lists'} button[data-zone$='{LIST}']", f"the list {LIST}")
    text_appears(driver, "#list-title", LIST, "the list's title")


class NetworkLog:
    """What the page sent and received, from Chromium's performance log."""

    def __init__(self, driver):
        self.driver = driver
        self.requests = {}

    def read(self):
        events = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            params = message.get("params", {})
            if message["method"] == "Network.requestWillBeSent":
                self.requests[params["requestId"]] = (params["request"]["method"], params["request"]["url"])
            events.append((message["method"], params, self.requests.get(params.get("requestId"))))
        return events


alice = browser()
bob = browser()
# Bob's page reaches the gateway through this proxy, which step 8 takes away.
bobs_gateway = GatewayProxy(gateway)
try:
    # 0-1. Alice signs in with the provider, makes a list, adds, renames and deletes items, shares it.
    sign_in(alice, "alice-1", "Alice", "alice@example.com", screenshot="sign-in-page")
    alice_token = token_of(alice)
    assert alice.find_element(By.ID, "own-empty").is_displayed() and alice.find_element(By.ID, "shared-empty").is_displayed(), "the empty lists say so"
    assert alice.find_element(By.ID, "no-list").is_displayed(), "no list chosen: the page says what to do"
    step(alice, "alice-signed-in-empty")
    visible(alice, "#new-list input[name=title]").send_keys(LIST + Keys.ENTER)
    text_appears(alice, "#list-title", LIST, "the new list")
    assert alice.find_element(By.ID, "items-empty").is_displayed(), "an empty list says so"
    assert alice.switch_to.active_element.get_attribute("name") == "title", "the new item's field has the focus"
    text_appears(alice, "#list-people", "Only you", "an unshared list says so")
    for title in ("Milk", "Eggs", "Cake"):
        add_item(alice, title)
    shows(alice, [("Milk", False), ("Eggs", False), ("Cake", False)], "Alice's three items")
    eggs = row(alice, "Eggs").find_element(By.CSS_SELECTOR, ".title")
    eggs.clear()
    eggs.send_keys("Free-range eggs" + Keys.ENTER)
    click_in_row(alice, "Cake", ".delete", "Cake's delete button")
    shows(alice, [("Milk", False), ("Free-range eggs", False)], "the rename and the deletion")
    sent_everything(alice, "Alice's items")
    me = api(alice_token, "{ me { userRecordName } }")["me"]["userRecordName"]
    zone = {"zoneName": LIST, "ownerName": me}
    assert server_items(zone) == {"Milk": False, "Free-range eggs": False}, f"the server has Alice's items: {server_items(zone)}"
    step(alice, "alice-made-a-list")

    click(alice, "#share", "the Share button")
    visible(alice, "#share-sheet", "the share sheet")
    text_appears(alice, "#share-people", "Nobody yet", "the sheet's empty state")
    assert alice.find_element(By.ID, "copy-link").get_attribute("disabled") is not None, "no link to copy before sharing"
    permission = alice.find_element(By.CSS_SELECTOR, "#share-form select[name=permission]")
    assert [o.get_attribute("value") for o in permission.find_elements(By.TAG_NAME, "option")] == ["READ_WRITE", "READ_ONLY"], "edit or view"
    assert permission.get_attribute("value") == "READ_WRITE", "edit is the default"
    visible(alice, "#share-form input[name=email]").send_keys(bob_email + Keys.ENTER)
    wait(alice, lambda d: d.find_element(By.ID, "share-url").get_attribute("value").startswith(gateway + "/share/"), "the share URL")
    text_appears(alice, "#share-people", bob_email, "the person invited")
    text_appears(alice, "#share-people", "can edit", "with the permission chosen")
    text_appears(alice, "#share-people", "invited", "not joined yet")
    share_url = alice.find_element(By.ID, "share-url").get_attribute("value")
    alice.execute_cdp_cmd("Browser.grantPermissions", {"origin": app_origin, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    click(alice, "#copy-link", "Copy")
    text_appears(alice, "#copied", "Link copied.", "the copy confirmed")
    copied = alice.execute_async_script("const done = arguments[0]; navigator.clipboard.readText().then(done, (error) => done('failed: ' + error));")
    assert copied == share_url, f"the clipboard holds the link: {copied!r}"
    step(alice, "alice-shared-the-list")
    alice.find_element(By.ID, "share-sheet").send_keys(Keys.ESCAPE)
    wait(alice, lambda d: not d.find_element(By.ID, "share-sheet").is_displayed(), "Escape to close the sheet")
    text_appears(alice, "#list-people", "Shared with", "the list says it is shared")

    # 2. Bob signs in with the provider, opens the link, sees the items and whose list it is.
    sign_in(bob, "bob-1", "Bob", bob_email, via=bobs_gateway.url)
    bob_token = token_of(bob, via=bobs_gateway.url)
    visible(bob, "#accept-share input[name=url]").send_keys(share_url + Keys.ENTER)
    text_appears(bob, "#list-title", LIST, "the accepted list")
    text_appears(bob, "#list-people", "Alice’s list · you can edit it", "whose list it is")
    text_appears(bob, "#shared-lists", "Alice’s", "the owner beside the list's name")
    shows(bob, [("Milk", False), ("Free-range eggs", False)], "the shared items for Bob")
    assert bob.find_elements(By.CSS_SELECTOR, f"#shared-lists button[data-zone$='{LIST}']"), "the list is under Shared with me"
    assert not bob.find_element(By.ID, "share").is_displayed(), "only the owner shares"
    step(bob, "bob-accepted")
    click(alice, "#share", "the Share button again")
    text_appears(alice, "#share-people", "Bob", "Bob by name, once he joined")
    text_appears(alice, "#share-people", "joined", "Bob joined")
    step(alice, "alice-sees-bob-joined")
    click(alice, "#close-share", "Done")

    # 3. Live, both ways, no reload.
    for driver in (alice, bob):
        driver.execute_script("document.body.dataset.sameDocument = 'yes'")
    add_item(alice, "Coffee")
    shows(bob, [("Milk", False), ("Free-range eggs", False), ("Coffee", False)], "Alice's new item in Bob's page, live")
    step(bob, "bob-sees-alice-add-live")
    click_in_row(bob, "Milk", "input[type=checkbox]", "Milk's checkbox")
    shows(alice, [("Milk", True), ("Free-range eggs", False), ("Coffee", False)], "Bob's tick in Alice's page, live")
    step(alice, "alice-sees-bob-tick-live")

    # 4. Bob goes offline: the page knows, every request fails, the socket carries nothing.
    network = NetworkLog(bob)
    network.read()
    sent_everything(bob, "Bob's tick")
    bob.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    wait(bob, lambda d: status(d)[0] == "false" and "Offline" in status(d)[2], "Bob's page to say it is offline")
    reached = bob.execute_async_script(f"""const done = arguments[0];
        fetch({json.dumps(gateway + '/health')}).then((response) => done('answered ' + response.status), (error) => done('failed: ' + error));""")
    assert reached.startswith("failed"), f"offline, the gateway still answers Bob's page: {reached}"
    # Meanwhile Alice adds an item and renames the one Bob is about to tick.
    add_item(alice, "Tea")
    eggs = row(alice, "Free-range eggs").find_element(By.CSS_SELECTOR, ".title")
    eggs.clear()
    eggs.send_keys("Eggs (6)" + Keys.ENTER)
    sent_everything(alice, "Alice's changes while Bob is offline")
    assert server_items(zone).get("Eggs (6)") is False and "Tea" in server_items(zone), server_items(zone)
    # Bob's edits show at once and wait.
    click_in_row(bob, "Free-range eggs", "input[type=checkbox]", "Free-range eggs's checkbox")
    add_item(bob, "Butter")
    shows(bob, [("Milk", True), ("Free-range eggs", True), ("Coffee", False), ("Butter", False)], "Bob's offline edits, shown at once", 5)
    wait(bob, lambda d: status(d)[1] == 2 and "2 changes waiting" in status(d)[2], "Bob's two changes waiting")
    # The engine tried to send them, and the network refused.
    refused = []
    wait(bob, lambda d: refused.extend(event for event in network.read()
                                       if event[0] == "Network.loadingFailed" and event[2] and event[2][0] == "POST"
                                       and event[2][1] == bobs_gateway.url + "/graphql" and "ERR_INTERNET_DISCONNECTED" in event[1]["errorText"]) or refused,
         "Bob's engine to try sending, and fail for want of a network")
    assert server_items(zone) == {"Milk": True, "Eggs (6)": False, "Coffee": False, "Tea": False}, f"nothing of Bob's offline edits on the server: {server_items(zone)}"
    received = [event[0] for event in network.read() if event[0] == "Network.webSocketFrameReceived"]
    assert not received, f"offline, Bob's open WebSocket still received {len(received)} frames"
    assert "Tea" not in [title for title, _ in items(bob)], "offline, Bob's page got Alice's new item"
    assert status(bob)[1] == 2, f"Bob's two changes still wait: {status(bob)}"
    bob_user = api(bob_token, "{ me { userRecordName } }")["me"]["userRecordName"]
    stored = stored_queue(bob, f"todo:{bobs_gateway.url}:{bob_user}:shared")
    assert stored is not None and len(stored) == 2, f"the queue is kept in IndexedDB with the copy: {stored}"
    step(bob, "bob-offline-edits", offline=True)

    # 5. Back online: both of Bob's changes reach Alice, hers reach him; the item both changed has her title and his tick.
    bob.delete_network_conditions()
    after = [("Milk", True), ("Eggs (6)", True), ("Coffee", False), ("Tea", False), ("Butter", False)]
    shows(alice, after, "Bob's offline edits in Alice's page, live", 30)
    step(alice, "alice-sees-bob-offline-edits")
    shows(bob, after, "Alice's changes in Bob's page, back online", 30)
    sent_everything(bob, "Bob's queue, back online")
    assert status(bob)[0] == "true", status(bob)
    assert server_items(zone) == dict(after), f"the server has everyone's changes: {server_items(zone)}"
    for driver in (alice, bob):
        assert driver.execute_script("return document.body.dataset.sameDocument") == "yes", "no page was reloaded"
    step(bob, "bob-back-online", offline=True)

    # 6. The service worker, registered by both pages; Notify me is offered.
    for name, driver in (("alice", alice), ("bob", bob)):
        registered = lambda d: d.execute_async_script("""const done = arguments[0];
            navigator.serviceWorker.getRegistration().then((registration) => done(registration?.active?.scriptURL ?? null), (error) => done(null));""")
        script = wait(driver, registered, f"{name}'s page to register the service worker")
        assert script == app_url.rstrip("/") + "/sw.js", script
        assert driver.find_element(By.ID, "notify").is_displayed(), "the Notify me button"

    # 7. Bob renames an item offline and closes the page before it could be sent; opened again
    #    online, the app starts from its stored copy and queue, and sends the rename.
    bob.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    wait(bob, lambda d: status(d)[0] == "false", "Bob's page to say it is offline again")
    coffee = row(bob, "Coffee").find_element(By.CSS_SELECTOR, ".title")
    coffee.clear()
    coffee.send_keys("Decaf" + Keys.ENTER)
    wait(bob, lambda d: status(d)[1] == 1, "Bob's rename waiting")
    renamed = [("Milk", True), ("Eggs (6)", True), ("Decaf", False), ("Tea", False), ("Butter", False)]
    shows(bob, renamed, "Bob's offline rename, shown at once", 5)
    step(bob, "bob-renames-offline", offline=True)
    close_for_good(bob)
    assert "Decaf" not in server_items(zone), f"the rename was not sent before the page closed: {server_items(zone)}"
    bob.get(app_url)
    visible(bob, "#app", "Bob signed in again from the kept session")
    open_list(bob, "shared")
    shows(bob, renamed, "Bob's list from the stored copy")
    shows(alice, renamed, "the rename queued before the page closed, in Alice's page", 30)
    sent_everything(bob, "the stored queue")
    step(alice, "alice-sees-the-rename-sent-after-reopening")

    # 8. The gateway away for 70 s, longer than every retry: Bob's page says it
    #    waits, not "Online"; back, the tick goes out by itself.
    wait(bob, lambda d: connection(d) == "online", "Bob's page to say it is online before the outage", 30)
    bobs_gateway.go_away()
    away_since = time.monotonic()
    click_in_row(bob, "Tea", "input[type=checkbox]", "Tea's checkbox")
    ticked = [("Milk", True), ("Eggs (6)", True), ("Decaf", False), ("Tea", True), ("Butter", False)]
    shows(bob, ticked, "Bob's tick, shown at once", 5)
    wait(bob, lambda d: connection(d) == "waiting", "Bob's page to say it waits for the server", 60)
    assert bob.execute_script("return navigator.onLine") is True, "the browser's network stayed up"
    # A reload with the gateway away: CanopyJS from the service worker's cache, the copy from IndexedDB.
    bob.refresh()
    visible(bob, "#app", "Bob's page reloaded with the gateway away, signed in from the kept session")
    open_list(bob, "shared")
    shows(bob, ticked, "Bob's list and tick after the reload, from the stored copy", 10)
    wait(bob, lambda d: connection(d) == "waiting" and status(d)[1] == 1, "Bob's reloaded page to say the tick waits for the server", 60)
    step(bob, "bob-reloads-with-the-gateway-away", away=True)
    while time.monotonic() - away_since < 70:
        said = status(bob)
        assert "Online" not in said[2], f"Bob's page says Online while the gateway is away: {said[2]!r}"
        assert said[1] == 1, f"the tick waits: {said}"
        assert not bob.find_element(By.ID, "message").is_displayed(), \
            f"the page shows an error for a server that is only away: {bob.find_element(By.ID, 'message').text!r}"
        time.sleep(2)
    assert "Waiting for the server" in status(bob)[2] and "1 change waiting" in status(bob)[2], status(bob)
    assert server_items(zone)["Tea"] is False, "the server has nothing of the tick yet"
    step(bob, "bob-waits-for-the-server", away=True)
    bobs_gateway.come_back()
    # Nobody touches the page: the engine resumes by itself (its pause after
    # a failure is at most a minute; the live connection coming back is sooner).
    wait(bob, lambda d: status(d)[1] == 0 and connection(d) == "online", "Bob's queue sent by itself once the gateway was back", 120)
    shows(alice, ticked, "the tick sent after the outage, in Alice's page", 30)
    assert server_items(zone)["Tea"] is True, f"the server has the tick: {server_items(zone)}"
    assert "Online" in status(bob)[2] and "up to date" in status(bob)[2], status(bob)
    step(bob, "bob-back-after-the-outage", away=True)
    print("the example web app's story passed", flush=True)
except Exception as error:
    for name, driver in (("alice", alice), ("bob", bob)):
        try:
            driver.save_screenshot(os.path.join(artifacts, f"failed-{name}.png"))
        except Exception:
            pass
    print(f"FAILED: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
    sys.exit(1)
finally:
    alice.quit()
    bob.quit()
