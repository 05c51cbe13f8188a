"""CanopyJS's sign-in (issue 52, item 1) in a real headless Chromium.

A page on another origin than the gateway's (clients/js/test/browser/
sign-in.html) imports CanopyJS from the gateway and signs in with the test
provider (identity_provider.py: the code flow with PKCE, a token endpoint
with refresh tokens):

1. by redirect: to the provider, back with a code, exchanged with the
   verifier, traded for a Canopy token; the code leaves the address bar;
2. the session survives a reload (INITIAL_SESSION) and the server accepts it;
3. the server stops accepting the token (revoked behind the page's back):
   the next call renews the session through the refresh token
   (TOKEN_REFRESHED) and succeeds;
4. sign-out revokes the token: once `signOut()` resolves the server
   refuses it, and an open SyncedDatabase (IndexedDB) pauses: it sends
   nothing, keeps the edit made meanwhile, and its sync() is refused;
5. by popup: the provider in a popup, the page signed in without leaving;
   the same user back, the copy sends what waited;
6. with the server away, the page names its offline store from the
   session (`userRecordName()` without a request) and opens its copy;
7. an answer this tab did not ask for (a forged state) is refused.

usage: canopyjs_sign_in.py PAGE_URL GATEWAY_URL PROVIDER_CONTROL_URL ARTIFACT_DIR
Prints "CanopyJS sign-in passed" at the end.
"""
import json
import os
import socket
import sys
import urllib.error
import urllib.request

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import console_browser

page, gateway, control, artifacts = sys.argv[1:5]
os.makedirs(artifacts, exist_ok=True)

driver = console_browser.browser()
driver.set_script_timeout(90)
step = [0]


def shot(name):
    step[0] += 1
    driver.save_screenshot(os.path.join(artifacts, f"{step[0]:02d}-{name}.png"))


def wait(condition, what, seconds=15):
    try:
        # The page navigates (to the provider and back): an element may vanish between looks.
        return WebDriverWait(driver, seconds, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(lambda _: condition())
    except TimeoutException:
        shot("failed")
        body = driver.find_element(By.TAG_NAME, "body").text[:1500]
        raise AssertionError(f"timed out waiting for {what}; at {driver.current_url}: {body!r}")


def events():
    return json.loads(driver.find_element(By.ID, "events").text or "[]")


def text(element_id):
    return driver.find_element(By.ID, element_id).text


def graphql(token, query, variables=None):
    request = urllib.request.Request(gateway + "/graphql", data=json.dumps({"query": query, "variables": variables or {}}).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def provider(path):
    with urllib.request.urlopen(control + path, timeout=10) as response:
        return json.loads(response.read())


def session():
    raw = driver.execute_script("return localStorage.getItem(arguments[0])", f"canopy.session:{gateway}")
    return json.loads(raw) if raw else None


def script(body, *args):
    """Runs `body` as an async function's body in the page (arguments[i]: args); answers what it returns."""
    outcome = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "(async () => {" + body + "})().then((value) => done({value}), (error) => done({error: `${error?.code ?? error?.name} ${error?.message}`}));",
        *args)
    assert "error" not in outcome, f"the page's script failed: {outcome['error']}"
    return outcome.get("value")


def unused_loopback_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ready():
    wait(lambda: driver.execute_script("return document.body.dataset.ready") == "true", "the page to load CanopyJS")


try:
    # 1. By redirect.
    driver.get(f"{page}?gateway={gateway}")
    ready()
    assert [e["event"] for e in events()] == ["INITIAL_SESSION"] and events()[0]["name"] is None, events()
    shot("signed-out")
    driver.find_element(By.ID, "redirect").click()
    wait(lambda: "signed in as Olivia" in text("who"), "signed in as Olivia after the provider's redirect")
    assert "code=" not in driver.current_url and "state=" not in driver.current_url, f"the code left the address bar: {driver.current_url}"
    assert driver.current_url == f"{page}?gateway={gateway}", driver.current_url
    assert [e["event"] for e in events()] == ["INITIAL_SESSION", "SIGNED_IN"], events()
    first = session()
    assert first["token"].startswith("cnp_") and first["refreshToken"], "a Canopy token and the provider's refresh token are kept"
    assert first["user"]["email"] == "olivia@example.com", first
    authorization = provider("/authorizations")["authorizations"][-1]
    assert authorization["response_type"] == "code" and authorization["code_challenge_method"] == "S256", authorization
    assert len(authorization["nonce"]) == 64, "the provider gets the nonce's SHA-256, never the nonce"
    assert provider("/token-requests")["requests"] == ["authorization_code"], provider("/token-requests")
    shot("signed-in-by-redirect")

    # 2. A reload keeps the session; the server accepts it.
    driver.refresh()
    ready()
    assert events() == [{"event": "INITIAL_SESSION", "name": "Olivia", "reason": None}], events()
    driver.find_element(By.ID, "whoami").click()
    wait(lambda: text("who") == "the server says Olivia", "the server to answer who is signed in")

    # 3. The token is refused from now on: the next call renews the session and succeeds.
    status, body = graphql(first["token"], "mutation($p: String!) { revokeToken(prefix: $p) }", {"p": first["prefix"]})
    assert status == 200 and body["data"]["revokeToken"] is True, body
    wait(lambda: graphql(first["token"], "{ me { name } }")[0] == 401, "the gateway to refuse the revoked token (its cache lets go)", seconds=30)
    driver.find_element(By.ID, "whoami").click()
    wait(lambda: any(e["event"] == "TOKEN_REFRESHED" for e in events()), "TOKEN_REFRESHED")
    wait(lambda: text("who") == "the server says Olivia", "the call to succeed with the renewed token")
    renewed = session()
    assert renewed["token"] != first["token"] and renewed["prefix"] != first["prefix"], "a new Canopy token"
    assert provider("/token-requests")["requests"] == ["authorization_code", "refresh_token"], provider("/token-requests")
    assert graphql(renewed["token"], "{ me { name } }")[0] == 200
    shot("token-refreshed")

    # 4. Sign-out revokes the token, and an open SyncedDatabase pauses.
    me = script("""
      const {container, IndexedDBStorage, SyncedDatabase} = window.canopy;
      const me = await container.userRecordName();
      await container.privateDatabase.saveZone("Notes");
      window.copy = await SyncedDatabase.open({database: container.privateDatabase, storage: new IndexedDBStorage(`notes:${me}:private`)});
      await window.copy.save("Notes", {recordName: "before", recordType: "Note", fields: {text: "signed in"}});
      await window.copy.whenSent();
      return me;
    """)
    assert me == renewed["user"]["userRecordName"], (me, renewed["user"])
    script("await window.canopy.container.signOut();")
    # Revoked when signOut() resolves, not when the gateway's token cache lets go (it kept a live token 4 s).
    status, body = graphql(renewed["token"], "{ me { name } }")
    assert status == 401, f"the signed-out token still works: {status} {body}"
    wait(lambda: events()[-1]["event"] == "SIGNED_OUT", "SIGNED_OUT")
    assert session() is None and text("who") == "signed out"
    paused = script("""
      const copy = window.copy;
      const before = window.canopy.requests();
      await copy.save("Notes", {recordName: "after", recordType: "Note", fields: {text: "while signed out"}});
      await new Promise((resolve) => setTimeout(resolve, 3000));   // room for an engine that did not pause to send
      let refused = null;
      try { await copy.sync(); } catch (error) { refused = error.code; }
      return {signedOut: copy.signedOut, sent: window.canopy.requests() - before, pending: copy.pendingCount, refused};
    """)
    assert paused == {"signedOut": True, "sent": 0, "pending": 1, "refused": "NOT_AUTHENTICATED"}, paused
    shot("signed-out-again")

    # 5. By popup: the page never leaves.
    before = driver.current_url
    driver.find_element(By.ID, "popup").click()
    wait(lambda: "signed in as Olivia" in text("who"), "signed in as Olivia through the popup")
    assert driver.current_url == before, driver.current_url
    wait(lambda: len(driver.window_handles) == 1, "the popup to close")
    assert events()[-1]["event"] == "SIGNED_IN", events()
    assert graphql(session()["token"], "{ me { name } }")[0] == 200
    resumed = script("""
      const copy = window.copy;
      await copy.whenSent();
      const saved = await window.canopy.container.privateDatabase.fetchRecord("Notes", "after");
      return {signedOut: copy.signedOut, pending: copy.pendingCount, text: saved.fields.text};
    """)
    assert resumed == {"signedOut": False, "pending": 0, "text": "while signed out"}, resumed
    shot("signed-in-by-popup")

    # 6. The server away: the store is named from the session, and the copy opens.
    away = f"http://127.0.0.1:{unused_loopback_port()}"
    offline = script("""
      const {Container, IndexedDBStorage, SyncedDatabase, gateway} = window.canopy;
      await window.copy.close();
      const away = new Container({baseURL: arguments[0], auth: {key: `canopy.session:${gateway}`}});
      const me = await away.userRecordName();   // the README's line: no request
      const copy = await SyncedDatabase.open({database: away.privateDatabase, storage: new IndexedDBStorage(`notes:${me}:private`)});
      const shown = copy.records("Notes").map((record) => record.recordName).sort();
      await copy.save("Notes", {recordName: "offline", recordType: "Note", fields: {text: "written away"}});
      for (let waited = 0; copy.serverReachable !== false && waited < 30000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
      const outcome = {me, shown, pending: copy.pendingCount, reachable: copy.serverReachable};
      await copy.close();
      away.close();
      return outcome;
    """, away)
    assert offline == {"me": me, "shown": ["after", "before"], "pending": 1, "reachable": False}, offline
    driver.find_element(By.ID, "sign-out").click()
    wait(lambda: session() is None, "signed out")

    # 7. An answer this tab did not start is refused, and signs nobody in.
    driver.get(f"{page}?code=stolen&state=forged")
    ready()
    wait(lambda: "not started from this tab" in text("problem"), "the forged answer refused")
    assert session() is None and "code=" not in driver.current_url
    shot("forged-answer-refused")
    print("CanopyJS sign-in passed")
finally:
    driver.quit()
