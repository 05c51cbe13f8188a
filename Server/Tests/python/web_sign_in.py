"""Signing in to the console with an OpenID Connect provider, in a real browser.

Headless Chromium opens an invitation link signed out, presses "Sign in
with Test IdP", goes through the provider's /authorize (identity_provider.py,
a real signed id token), comes back to the console, which trades the id
token for a Canopy token and returns to the invitation; the person accepts,
sees the shared zone, and leaves it from the sharing sheet; signing out
revokes the token the console made. Then a sign-in answer this tab did not start (a
forged state) is refused.

usage: web_sign_in.py BASE_URL SHARE_PATH ARTIFACT_DIR
Prints one JSON line: {"token": "cnp_…"-prefix, "url": ..., "name": ...}.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

base, share_path, artifacts = sys.argv[1:4]
os.makedirs(artifacts, exist_ok=True)

options = Options()
options.binary_location = "/usr/bin/chromium"
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1000,800"):
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait(condition, what):
    try:
        return WebDriverWait(driver, 10).until(condition)
    except TimeoutException:
        driver.save_screenshot(os.path.join(artifacts, "failed.png"))
        raise AssertionError(f"timed out waiting for {what}; at {driver.current_url}: {driver.find_element(By.TAG_NAME, 'body').text[:1000]!r}")


try:
    driver.get(base + share_path)
    provider = wait(EC.element_to_be_clickable((By.CSS_SELECTOR, "button[data-provider=idp]")), "the provider's button on the invitation page")
    assert provider.text == "Sign in with Test IdP", provider.text
    driver.save_screenshot(os.path.join(artifacts, "01-invitation-sign-in.png"))
    provider.click()
    accept = wait(EC.element_to_be_clickable((By.ID, "accept-share")), "Accept, back on the invitation page signed in")
    assert driver.current_url == base + share_path, f"back where the person started, without the id token: {driver.current_url}"
    token = driver.execute_script("return sessionStorage.getItem('canopy.token')")
    assert token and token.startswith("cnp_"), "the id token was traded for a Canopy token"
    driver.save_screenshot(os.path.join(artifacts, "02-invitation-signed-in-with-provider.png"))
    accept.click()
    wait(EC.visibility_of_element_located((By.CSS_SELECTOR, "#records-table")), "the shared zone's records")
    name = driver.find_element(By.ID, "signed-in-name").text
    assert "id_token" not in driver.current_url and "id_token" not in driver.execute_script("return JSON.stringify(history.state) + document.referrer")
    driver.save_screenshot(os.path.join(artifacts, "03-accepted.png"))

    # The participant leaves from the sharing sheet; the zone leaves their list.
    wait(EC.element_to_be_clickable((By.ID, "share-zone")), "Sharing…").click()
    wait(EC.element_to_be_clickable((By.ID, "leave-share")), "Leave share").click()
    driver.switch_to.alert.accept()
    wait(EC.visibility_of_element_located((By.ID, "shared-zones")), "the zones list after leaving")
    wait(lambda d: "Nothing yet" in d.find_element(By.ID, "shared-zones").text, "the zone to leave the list")
    driver.save_screenshot(os.path.join(artifacts, "04-left.png"))

    # Signing out revokes the token the console made: it stops working.
    wait(EC.element_to_be_clickable((By.XPATH, "//header//button[normalize-space()='Sign out']")), "Sign out").click()
    wait(EC.visibility_of_element_located((By.CSS_SELECTOR, "form.signin")), "the sign-in form after signing out")
    refused = None
    for _ in range(30):
        request = urllib.request.Request(base + "/graphql", data=json.dumps({"query": "{ me { name } }"}).encode(),
                                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request)
        except urllib.error.HTTPError as error:
            refused = error.code
            break
        time.sleep(0.25)
    assert refused == 401, f"the console's own token still works after signing out ({refused})"

    # An answer this tab did not ask for: refused, and its token not kept.
    driver.execute_script("sessionStorage.clear()")
    driver.get(base + "/#id_token=forged.token.here&state=not-mine")
    wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "form.signin"), "not started from this tab"), "the forged sign-in's refusal")
    assert driver.execute_script("return sessionStorage.getItem('canopy.token')") is None
    assert "id_token" not in driver.current_url
    driver.save_screenshot(os.path.join(artifacts, "05-forged-state.png"))
    print(json.dumps({"token": token[:4], "name": name}))
finally:
    driver.quit()
