"""A real `nimbus serve` on a free loopback port over a temporary data directory, one
operator made with `nimbus operator create`, and headless Chromium driven by Selenium.

The server is stopped (its process group killed) and the data removed whatever happens.
Set NIMBUS_BIN to the `nimbus` executable (default: .build/debug/nimbus) and
NIMBUS_SCREENSHOTS to a folder to save screenshots of the main pages there.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPERATOR = "ops"
PASSWORD = "browser-test-password"
CONTAINER = "iCloud.com.example.browser"


def nimbus_bin():
    return os.environ.get("NIMBUS_BIN") or os.path.join(ROOT, ".build", "debug", "nimbus")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_cli(data, *args, stdin=None):
    result = subprocess.run(
        [nimbus_bin(), *args, "--data", data], input=stdin, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"nimbus {' '.join(args)} failed: {result.stderr}{result.stdout}")
    return result.stdout


class Server:
    """The running server: its URL, data directory and API helpers."""

    def __init__(self, base_url, data):
        self.base_url = base_url
        self.data = data
        self.api_token = None

    def user_token(self, name):
        out = run_cli(self.data, "user", "create", name, "--container", CONTAINER, "--json")
        return json.loads(out)["webAuthToken"]

    def api(self, operation, body, web_token):
        url = (f"{self.base_url}/database/1/{CONTAINER}/development/public/{operation}"
               f"?ckAPIToken={self.api_token}&ckWebAuthToken={web_token}")
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            return json.loads(error.read())


@pytest.fixture(scope="session")
def server():
    data = tempfile.mkdtemp(prefix="nimbus-browser-")
    process = None
    try:
        run_cli(data, "operator", "create", OPERATOR, "--password-stdin", stdin=PASSWORD + "\n")
        port = free_port()
        log = open(os.path.join(data, "serve.log"), "w")
        process = subprocess.Popen(
            [nimbus_bin(), "serve", "--host", "127.0.0.1", "--port", str(port), "--data", data],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError("nimbus serve exited: " + open(os.path.join(data, "serve.log")).read())
            try:
                with urllib.request.urlopen(base_url + "/health", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise RuntimeError("nimbus serve did not answer within 60 s")
                time.sleep(0.1)  # polling a starting process: no event to wait for
        printed = open(os.path.join(data, "serve.log")).read()
        assert f"Dashboard: {base_url}/" in printed, printed
        yield Server(base_url, data)
    finally:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=20)
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def driver():
    options = Options()
    options.add_argument("--headless=new")
    options.add_argument("--no-sandbox")
    options.add_argument("--disable-dev-shm-usage")
    options.add_argument("--window-size=1280,900")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        options.binary_location = binary
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    browser = webdriver.Chrome(service=service, options=options)
    browser.set_page_load_timeout(60)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope="session")
def shots():
    folder = os.environ.get("NIMBUS_SCREENSHOTS")

    def take(driver, name, width=1280):
        if folder:
            os.makedirs(folder, exist_ok=True)
            driver.set_window_size(width, 900)
            height = driver.execute_script("return document.body.scrollHeight")
            driver.set_window_size(width, max(900, min(height + 40, 2400)))
            driver.save_screenshot(os.path.join(folder, f"{name}.png"))
            driver.set_window_size(1280, 900)
    return take
