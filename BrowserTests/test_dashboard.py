"""The dashboard in a real browser against a real server, in the order an operator works:
each test builds on the state the ones before left (pytest runs a file's tests in order)."""
import base64
import json
import os
import re
import secrets
import subprocess
import urllib.request

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import CONTAINER, OPERATOR, PASSWORD, run_cli

state = {}


def wait(driver, seconds=15):
    return WebDriverWait(driver, seconds)


def new_note(server, name, title):
    answer = server.api("records/modify", {"operations": [{
        "operationType": "create",
        "record": {"recordName": name, "recordType": "Note", "fields": {"title": {"value": title}}}}]},
        state["user"])
    assert "serverErrorCode" not in answer["records"][0], answer
    return answer["records"][0]["recordChangeTag"]


def look_up(server, name):
    return server.api("records/lookup", {"records": [{"recordName": name}]}, state["user"])["records"][0]


def open_record(driver, server, name):
    driver.get(f"{server.base_url}/dashboard/record?c={CONTAINER}&env=development&zone=_defaultZone&record={name}")
    wait(driver).until(EC.presence_of_element_located((By.ID, "fields")))


def test_sign_in(server, driver, shots):
    driver.get(server.base_url + "/")
    wait(driver).until(EC.presence_of_element_located((By.ID, "password")))
    assert "/dashboard/signin" in driver.current_url
    shots(driver, "signin")
    driver.find_element(By.ID, "name").send_keys(OPERATOR)
    driver.find_element(By.ID, "password").send_keys("wrong password")
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    assert "Wrong name or password" in wait(driver).until(
        EC.presence_of_element_located((By.CSS_SELECTOR, "p.error"))).text
    driver.find_element(By.ID, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form.stack button[type=submit]").click()
    wait(driver).until(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Containers"))
    assert OPERATOR in driver.find_element(By.CSS_SELECTOR, ".who").text


def test_create_container(server, driver, shots):
    driver.find_element(By.ID, "identifier").send_keys(CONTAINER)
    driver.find_element(By.ID, "identifier").submit()
    wait(driver).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "p.notice"), "created"))
    server.api_token = driver.find_element(By.ID, "secret").text.strip()
    assert re.fullmatch(r"[0-9a-f]{32,}", server.api_token), server.api_token
    shots(driver, "container")
    driver.get(server.base_url + "/dashboard")
    assert CONTAINER in driver.find_element(By.CSS_SELECTOR, "ul.containers").text
    shots(driver, "containers")
    state["user"] = server.user_token("alice")


def test_record_saved_through_the_api_appears(server, driver, shots):
    new_note(server, "first-note", "Hello from the API")
    driver.get(f"{server.base_url}/dashboard/zones?c={CONTAINER}&env=development")
    driver.find_element(By.LINK_TEXT, "_defaultZone").click()
    table = wait(driver).until(EC.presence_of_element_located((By.ID, "records")))
    assert "first-note" in table.text
    shots(driver, "records")


def test_edit_in_the_dashboard_reads_back_through_the_api(server, driver, shots):
    open_record(driver, server, "first-note")
    assert driver.find_elements(By.CSS_SELECTOR, "p.notice, #conflict") == []
    shots(driver, "record")
    title = driver.find_element(By.ID, "f-title")
    title.clear()
    title.send_keys("Edited in the dashboard")
    driver.find_element(By.CSS_SELECTOR, "#edit button[type=submit]").click()
    wait(driver).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "p.notice"), "Saved"))
    shots(driver, "record-phone", width=390)
    assert look_up(server, "first-note")["fields"]["title"]["value"] == "Edited in the dashboard"


def test_stale_tag_edit_is_a_conflict(server, driver):
    tag = new_note(server, "contested", "original")
    open_record(driver, server, "contested")
    answer = server.api("records/modify", {"operations": [{
        "operationType": "update",
        "record": {"recordName": "contested", "recordType": "Note", "recordChangeTag": tag,
                   "fields": {"title": {"value": "saved by the app"}}}}]}, state["user"])
    assert "serverErrorCode" not in answer["records"][0], answer
    title = driver.find_element(By.ID, "f-title")
    title.clear()
    title.send_keys("saved in the dashboard")
    driver.find_element(By.CSS_SELECTOR, "#edit button[type=submit]").click()
    conflict = wait(driver).until(EC.presence_of_element_located((By.ID, "conflict")))
    assert "Conflict" in conflict.text
    assert look_up(server, "contested")["fields"]["title"]["value"] == "saved by the app"


def test_script_in_a_field_is_shown_as_text(server, driver):
    payload = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">"
    new_note(server, "hostile", payload)
    open_record(driver, server, "hostile")
    cell = driver.find_element(By.CSS_SELECTOR, "td.value[data-field=title]")
    assert cell.text.strip() == payload
    assert driver.execute_script("return window.pwned") is None
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text


PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def test_image_asset_is_previewed(server, driver):
    upload = server.api("assets/upload", {"tokens": [
        {"recordName": "picture", "recordType": "Picture", "fieldName": "image"}]}, state["user"])
    request = urllib.request.Request(upload["tokens"][0]["url"], data=PNG_1X1, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        single_file = json.loads(response.read())["singleFile"]
    answer = server.api("records/modify", {"operations": [{"operationType": "create", "record": {
        "recordName": "picture", "recordType": "Picture",
        "fields": {"image": {"type": "ASSETID", "value": single_file}}}}]}, state["user"])
    assert "serverErrorCode" not in answer["records"][0], answer
    open_record(driver, server, "picture")
    preview = wait(driver).until(EC.presence_of_element_located((By.CSS_SELECTOR, "img.asset-preview")))
    wait(driver).until(lambda _: driver.execute_script(
        "return arguments[0].complete && arguments[0].naturalWidth", preview) == 1)
    assert "Download (" in driver.find_element(By.CSS_SELECTOR, "td.value[data-field=image]").text


def test_query_builder(server, driver, shots):
    driver.get(f"{server.base_url}/dashboard/query?c={CONTAINER}&env=development")
    driver.find_element(By.ID, "recordType").send_keys("Note")
    driver.find_element(By.ID, "ff0").send_keys("title")
    Select(driver.find_element(By.ID, "fc0")).select_by_visible_text("BEGINS_WITH")
    driver.find_element(By.ID, "fv0").send_keys("Edited")
    driver.find_element(By.ID, "desiredKeys").send_keys("title")
    driver.find_element(By.CSS_SELECTOR, "#query-form button[type=submit]").click()
    results = wait(driver).until(EC.presence_of_element_located((By.ID, "results")))
    assert "first-note" in results.text
    assert "contested" not in results.text
    curl = driver.find_element(By.ID, "curl").text
    assert "records/query" in curl and "BEGINS_WITH" in curl
    shots(driver, "query")
    # The command shown is the request the page ran: run it.
    ran = subprocess.run(["sh", "-c", curl], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "NIMBUS_API_TOKEN": server.api_token})
    assert ran.returncode == 0, ran.stderr
    names = [record["recordName"] for record in json.loads(ran.stdout)["records"]]
    assert names == ["first-note"], ran.stdout


def test_deploy_schema(server, driver, shots):
    driver.get(f"{server.base_url}/dashboard/schema?c={CONTAINER}")
    assert "record type Note" in driver.find_element(By.ID, "schema-diff").text
    shots(driver, "schema")
    driver.find_element(By.ID, "deploy").click()
    wait(driver).until(EC.alert_is_present()).accept()
    message = wait(driver).until(EC.presence_of_element_located((By.ID, "schema-message")))
    assert "Deployed" in message.text
    assert driver.find_elements(By.ID, "deploy") == []


def production_api(server, operation, body, web_token):
    url = (f"{server.base_url}/database/1/{CONTAINER}/production/public/{operation}"
           f"?ckAPIToken={server.api_token}&ckWebAuthToken={web_token}")
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_grant_security_role(server, driver, shots):
    # Production gains a role and a record type only its holders create (`nimbus schema deploy`).
    exported = run_cli(server.data, "schema", "export", "--container", CONTAINER, "--environment", "production")
    schema_file = os.path.join(server.data, "with-role.ckdb")
    with open(schema_file, "w") as file:
        file.write(exported + "\n    CREATE ROLE editors;\n"
                   "    RECORD TYPE Memo ( text STRING, GRANT READ, CREATE, WRITE TO editors );\n")
    run_cli(server.data, "schema", "deploy", "--container", CONTAINER, "--file", schema_file)
    def memo(operation):
        return {"operations": [{"operationType": operation, "record": {
            "recordName": "memo-1", "recordType": "Memo", "fields": {"text": {"value": operation}}}}]}
    refused = production_api(server, "records/modify", memo("create"), state["user"])["records"][0]
    assert refused["serverErrorCode"] == "ACCESS_DENIED", refused

    alice = json.loads(run_cli(server.data, "user", "show", "alice", "--container", CONTAINER, "--json"))
    driver.get(f"{server.base_url}/dashboard/user?c={CONTAINER}&u={alice['userRecordName']}")
    grant = wait(driver).until(EC.element_to_be_clickable((By.ID, "role-production-editors")))
    assert grant.text == "Grant"
    grant.click()
    notice = wait(driver).until(EC.presence_of_element_located((By.CSS_SELECTOR, "p.notice")))
    assert "alice now holds role editors in production." in notice.text
    assert driver.find_element(By.ID, "role-production-editors").text == "Revoke"
    shots(driver, "user-roles")
    saved = production_api(server, "records/modify", memo("create"), state["user"])["records"][0]
    assert saved.get("recordName") == "memo-1", saved

    listed = json.loads(run_cli(server.data, "role", "list", "--container", CONTAINER, "--environment", "production", "--json"))
    assert listed == {"editors": [f"alice ({alice['userRecordName']})"]}
    run_cli(server.data, "role", "revoke", "editors", "--user", "alice", "--container", CONTAINER,
            "--environment", "production")
    again = production_api(server, "records/modify", memo("forceUpdate"), state["user"])["records"][0]
    assert again["serverErrorCode"] == "ACCESS_DENIED", again


def test_live_request_counter_moves(server, driver, shots):
    driver.get(server.base_url + "/dashboard/live")
    total = driver.find_element(By.CSS_SELECTOR, "[data-live=total]")
    # The first event replaces the rendered number; wait for it, then for a larger one.
    wait(driver).until(lambda _: total.text.isdigit())
    before = int(total.text)
    for _ in range(5):
        look_up(server, "first-note")
    wait(driver).until(lambda _: total.text.isdigit() and int(total.text) >= before + 5)
    rates = driver.find_element(By.ID, "live-operations").text
    wait(driver).until(lambda _: "records/lookup" in driver.find_element(By.ID, "live-operations").text)
    assert "nimbus" in driver.find_element(By.ID, "live-log").text
    shots(driver, "live")
    assert rates is not None


def test_trace_of_a_record(server, driver, shots):
    # A change sent as the SDK sends a traced one: a sampled W3C traceparent.
    trace_id = secrets.token_hex(16)
    url = (f"{server.base_url}/database/1/{CONTAINER}/development/public/records/modify"
           f"?ckAPIToken={server.api_token}&ckWebAuthToken={state['user']}")
    body = {"operations": [{"operationType": "create", "record": {
        "recordName": "traced-note", "recordType": "Note", "fields": {"title": {"value": "traced"}}}}]}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("traceparent", f"00-{trace_id}-{secrets.token_hex(8)}-01")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert "serverErrorCode" not in json.loads(response.read())["records"][0]
    driver.get(server.base_url + "/dashboard")
    driver.find_element(By.LINK_TEXT, "Traces").click()
    search = wait(driver).until(EC.presence_of_element_located((By.ID, "q")))
    search.send_keys("traced-note")
    search.submit()

    # The server writes hops to its store every 200 ms: search again until they are there.
    def verdict(_):
        text = driver.find_element(By.ID, "verdict").text
        if "not sent" in text:
            driver.find_element(By.ID, "trace-search").submit()
            return False
        return text
    text = wait(driver).until(verdict)
    assert text.startswith("Where it stopped: committed"), text
    assert trace_id in driver.find_element(By.ID, "trace-id").text
    assert "records/modify" in driver.find_element(By.ID, "hops").text
    assert trace_id in driver.find_element(By.ID, "recent-traces").text
    shots(driver, "traces")
    # The record page links to the same trace.
    open_record(driver, server, "traced-note")
    driver.find_element(By.ID, "trace-link").click()
    assert trace_id in wait(driver).until(EC.presence_of_element_located((By.ID, "trace-id"))).text


def test_sign_out(server, driver):
    driver.get(server.base_url + "/dashboard")
    driver.find_element(By.CSS_SELECTOR, "form.signout button").click()
    wait(driver).until(EC.presence_of_element_located((By.ID, "password")))
    driver.get(server.base_url + "/dashboard")
    assert "/dashboard/signin" in driver.current_url
