"""A real browser calling the gateway from another origin (docs/API.md §10, CORS).

Headless Chromium (Debian's chromium and chromium-driver, driven by
Selenium) opens a page served from an allowed origin and one from a refused
origin; each page calls POST /graphql with fetch(), an Authorization header
and a JSON body, which makes the browser send a CORS preflight first.

usage: browser_cors.py GRAPHQL_URL TOKEN ALLOWED_PORT REFUSED_PORT
Prints one JSON line: {"allowed": {...what the page saw...}, "refused": {...}}.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

graphql_url, token, allowed_port, refused_port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

PAGE = b"<!doctype html><title>app</title><p>an app page</p>"


class Page(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


servers = [ThreadingHTTPServer(("127.0.0.1", port), Page) for port in (allowed_port, refused_port)]
for server in servers:
    threading.Thread(target=server.serve_forever, daemon=True).start()

options = Options()
options.binary_location = "/usr/bin/chromium"
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
driver.set_script_timeout(30)

CALL = """
const [url, token, done] = arguments;
fetch(url, {method: "POST", headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
            body: JSON.stringify({query: "{ me { name } }"})})
  .then(async response => done({status: response.status, body: await response.json(),
                                requestId: response.headers.get("X-Request-ID")}))
  .catch(error => done({error: String(error)}));
"""

seen = {}
try:
    for name, port in (("allowed", allowed_port), ("refused", refused_port)):
        driver.get(f"http://127.0.0.1:{port}/")
        seen[name] = driver.execute_async_script(CALL, graphql_url, token)
finally:
    driver.quit()
    for server in servers:
        server.shutdown()
print(json.dumps(seen))
