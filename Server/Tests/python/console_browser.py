"""The browser steps the console's Selenium stories share (web_console.py,
web_public.py): headless Chromium, a screenshot a step that fails on any
error the page logged, waits with a deadline that say what they waited for.
"""
import os

from selenium import webdriver
from selenium.common.exceptions import (ElementClickInterceptedException, NoSuchElementException,
                                        StaleElementReferenceException, TimeoutException, WebDriverException)
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

artifacts = "."
step_number = 0


def use_artifacts(directory):
    """Where screenshots go (made if missing)."""
    global artifacts
    artifacts = directory
    os.makedirs(artifacts, exist_ok=True)


def browser():
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1200,900", "--lang=en-US"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(20)
    return driver


def step(driver, name):
    """Saves a screenshot of the step; fails the test if the page logged an error."""
    global step_number
    step_number += 1
    path = os.path.join(artifacts, f"{step_number:02d}-{name}.png")
    driver.save_screenshot(path)
    print(f"step {step_number:02d} {name}: {path}", flush=True)
    problems = [entry["message"] for entry in driver.get_log("browser")
                if entry["level"] == "SEVERE" and "favicon" not in entry["message"] and "Failed to load resource" not in entry["message"]]
    if problems:
        raise AssertionError(f"{name}: the page logged errors: {problems}")


def wait(driver, condition, what, seconds=10):
    try:
        return WebDriverWait(driver, seconds).until(condition)
    except TimeoutException:
        driver.save_screenshot(os.path.join(artifacts, f"failed-{what.replace(' ', '-')[:40]}.png"))
        raise AssertionError(f"timed out waiting for {what}; page text: {driver.find_element(By.TAG_NAME, 'body').text[:1500]!r}")


def visible(driver, css, what=None):
    return wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, css)), what or css)


def clickable(driver, css, what=None):
    return wait(driver, EC.element_to_be_clickable((By.CSS_SELECTOR, css)), what or css)


def replaced(error):
    """Whether `error` says the element left the page (a re-render replaced it).
    Chromium says so as a stale reference, or, when the node goes between
    finding and using it, as an inspector error."""
    return isinstance(error, (StaleElementReferenceException, NoSuchElementException, ElementClickInterceptedException)) \
        or (isinstance(error, WebDriverException) and "does not belong to the document" in str(error))


def click_when(driver, find, what):
    """Clicks the element `find(driver)` returns once it is clickable, finding
    it again if a re-render replaced it meanwhile."""
    def attempt(d):
        try:
            element = find(d)
            if not (element.is_displayed() and element.is_enabled()):
                return False
            element.click()
            return True
        except (AssertionError, WebDriverException) as error:
            if isinstance(error, AssertionError) or replaced(error):
                return False
            raise
    wait(driver, attempt, what)


def click(driver, css, what=None, by=By.CSS_SELECTOR):
    """Clicks once the element is clickable, again if a re-render replaced it meanwhile."""
    click_when(driver, lambda d: d.find_element(by, css), what or f"to click {css}")


def text_appears(driver, css, text, what=None):
    return wait(driver, EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text), what or f"'{text}' in {css}")


def sign_in(driver, token):
    """Signs in with the keyboard only: the token, then Enter."""
    field = visible(driver, "input[name=token]", "the sign-in form")
    field.send_keys(token + Keys.ENTER)


def press(driver, words, scope="body"):
    """Clicks the button or link whose text is `words`."""
    click(driver, f"//{scope}//*[self::button or self::a][normalize-space()='{words}']", f"the button '{words}'", By.XPATH)
