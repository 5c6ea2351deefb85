"""CloudKit JS's sign-in window against Nimbus's sign-in page, in headless Chromium.

cloudkit.js (Apple's licence keeps it out of this repository) signs a user in like this: on
AUTHENTICATION_REQUIRED it keeps the answer's `redirectURL`; its sign-in button calls
`window.open(redirectURL, "", "width=…, height=…")`; a `message` listener on its window takes
the first event whose `data` is an object and reads the web auth token from `data.ckSession`
(or a failure from `data.errorMessage`), then asks `users/current` with the token. The app page
below does exactly that, served from an origin of its own (so it reads the API's answers
cross-origin, as the container's allowed origin), and the test drives the messages
cloudkit.js expects through a real pop-up.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from conftest import free_port, run_cli

CONTAINER = "iCloud.com.example.popup"
EMAIL = "popup@example.com"
PASSWORD = "correct horse battery"

APP_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>app</title></head><body>
<button id="signin">Sign in with Nimbus</button>
<pre id="got"></pre><pre id="me"></pre>
<script>
// #{"api": ".../database/1/C/development", "apiToken": "...", "signInURL": optional}
var config = JSON.parse(decodeURIComponent(location.hash.slice(1)));
var signInURL = config.signInURL || null;
var got = [];
function current(webAuthToken) {
  var url = config.api + "/private/users/current?ckAPIToken=" + config.apiToken;
  if (webAuthToken) { url += "&ckWebAuthToken=" + webAuthToken; }
  return fetch(url).then(function (response) { return response.json(); });
}
// As cloudkit.js's setUpAuth: who is signed in? AUTHENTICATION_REQUIRED carries redirectURL.
if (!signInURL) {
  current().then(function (answer) { signInURL = answer.redirectURL; document.body.dataset.ready = "yes"; });
} else {
  document.body.dataset.ready = "yes";
}
// As cloudkit.js's getAsyncMessageFromPopup: the first message whose data is an object.
window.addEventListener("message", function (event) {
  if (event.data !== null && typeof event.data === "object") {
    got.push({origin: event.origin, ckSession: event.data.ckSession, errorMessage: event.data.errorMessage});
    document.getElementById("got").textContent = JSON.stringify(got);
    if (event.data.ckSession && event.data.ckSession !== "probe") {
      current(event.data.ckSession).then(function (me) {
        document.getElementById("me").textContent = JSON.stringify(me);
      });
    }
  }
}, false);
document.getElementById("signin").onclick = function () {
  window.open(signInURL, "", "width=500, height=600");
};
</script></body></html>
"""


def call(server, path, body=None, token=None, web_token=None):
    query = {"ckAPIToken": token}
    if web_token:
        query["ckWebAuthToken"] = web_token
    url = f"{server.base_url}/database/1/{CONTAINER}/development/{path}?" + urllib.parse.urlencode(query)
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def app_site():
    """A static site on its own port: the app page CloudKit JS would run in."""
    folder = tempfile.mkdtemp(prefix="nimbus-app-")
    with open(os.path.join(folder, "app.html"), "w") as file:
        file.write(APP_PAGE)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "0.0.0.0", "--directory", folder],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the app site did not start")
                time.sleep(0.05)  # polling a starting process: no event to wait for
        yield port
    finally:
        process.terminate()
        process.wait(timeout=20)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def signin_container(server, app_site):
    """A container with built-in accounts whose only allowed origin is the app site, and one verified account."""
    token = json.loads(run_cli(server.data, "container", "create", CONTAINER, "--json"))["apiToken"]
    run_cli(server.data, "container", "set-signin", CONTAINER, "--passwords", "on",
            "--redirect-origin", f"http://127.0.0.1:{app_site}")
    status, _ = call(server, "public/accounts/signup", {"email": EMAIL, "password": PASSWORD}, token)
    assert status == 200
    log = open(os.path.join(server.data, "serve.log")).read()
    codes = re.findall(r"verification code is ([0-9a-f]+)", log)
    assert codes, log[-2000:]
    status, answer = call(server, "public/accounts/verify", {"email": EMAIL, "code": codes[-1]}, token)
    assert status == 200, answer
    return token


def sign_in_through_popup(driver, app_url, config):
    driver.get(app_url + "#" + urllib.parse.quote(json.dumps(config), safe=""))
    WebDriverWait(driver, 15).until(
        lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
    opener = driver.current_window_handle
    driver.find_element(By.ID, "signin").click()
    WebDriverWait(driver, 15).until(lambda d: len(d.window_handles) == 2)
    popup = next(handle for handle in driver.window_handles if handle != opener)
    driver.switch_to.window(popup)
    WebDriverWait(driver, 15).until(EC.presence_of_element_located((By.NAME, "email"))).send_keys(EMAIL)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    # The hand-back page posts to the opener and closes its window.
    WebDriverWait(driver, 15).until(lambda d: len(d.window_handles) == 1)
    driver.switch_to.window(opener)


def test_popup_hands_the_token_to_an_allowed_opener(server, driver, app_site, signin_container):
    status, required = call(server, "private/users/current", token=signin_container)
    assert status == 421 and required["serverErrorCode"] == "AUTHENTICATION_REQUIRED", required
    assert required["redirectURL"] == f"{server.base_url}/signin/{CONTAINER}/development"

    # The page reads the 421 itself (a cross-origin read its origin is allowed), as cloudkit.js does.
    api = f"{server.base_url}/database/1/{CONTAINER}/development"
    sign_in_through_popup(driver, f"http://127.0.0.1:{app_site}/app.html", {"api": api, "apiToken": signin_container})
    got = WebDriverWait(driver, 15).until(lambda d: d.find_element(By.ID, "got").text or False)
    messages = json.loads(got)
    assert len(messages) == 1, messages
    assert messages[0]["origin"] == server.base_url
    token = messages[0]["ckSession"]
    assert re.fullmatch(r"[0-9a-f]{64}", token), messages

    # The page is signed in: users/current with the token, read cross-origin.
    me = json.loads(WebDriverWait(driver, 15).until(lambda d: d.find_element(By.ID, "me").text or False))
    status, expected = call(server, "private/users/current", token=signin_container, web_token=token)
    assert status == 200, expected
    assert me["userRecordName"] == expected["userRecordName"]


def test_popup_gives_no_token_to_an_opener_on_another_origin(server, driver, app_site, signin_container):
    # The same page on http://localhost:PORT: another origin than the allowed http://127.0.0.1:PORT.
    # It cannot read the API's answers, so it is handed the sign-in URL.
    api = f"{server.base_url}/database/1/{CONTAINER}/development"
    sessions_before = run_cli(server.data, "session", "list", "--container", CONTAINER, "--json")
    sign_in_through_popup(driver, f"http://localhost:{app_site}/app.html", {
        "api": api, "apiToken": signin_container, "signInURL": f"{server.base_url}/signin/{CONTAINER}/development"})
    # The sign-in happened (one more session), but the message went to no window on this origin.
    sessions_after = run_cli(server.data, "session", "list", "--container", CONTAINER, "--json")
    assert len(json.loads(sessions_after)) == len(json.loads(sessions_before)) + 1
    # A message the page posts to itself now arrives after any the pop-up posted earlier: when
    # it is in, the pop-up's would be too. Only the probe is there.
    driver.execute_script("window.postMessage({ckSession: 'probe'}, '*')")
    got = WebDriverWait(driver, 15).until(lambda d: d.find_element(By.ID, "got").text or False)
    assert [message["ckSession"] for message in json.loads(got)] == ["probe"], got
