"""The playground page in headless Chromium (Debian's chromium and chromedriver, via Selenium).

Serves the built site on a free loopback port (with `--make`, through `make playground` as the
README runs it: the line it prints, the page at that address, Ctrl-C stopping it), loads the
MetaTool sample, searches, and holds
the page to the filter: the answer the page shows must equal the one `filter-answer` computes
natively through the core as the proxy-wasm glue drives it, for the same catalog,
configuration and query; the ranked table must list the answer's tools in its order; and a bad
configuration must show the parser's own message. Run by `make test-playground`.
"""

import argparse
import signal
import functools
import http.server
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support.ui import Select, WebDriverWait

# The page renders its panes again as its inputs change: an element a wait's condition found
# can be replaced before the condition reads it. The condition is then asked again, not failed.
RENDERED_AGAIN = (StaleElementReferenceException,)

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUERY = "search academic papers"
TOP = "ResearchFinder"
BAD_CONFIG = '{"search": {"max_allowable_results": 0}}'
POLICY_CONFIG = {
    "group_separator": "_",
    "authorization": {
        "identity": {"source": "header", "header": "x-user-roles"},
        "rules": [{"claim": "roles", "values": ["support"], "tools": ["Research*", "*Weather*"]}],
        "default": "deny",
    },
}


def unidentified(reply):
    """A search's reply without its `search_id`: the page and the filter are different VMs."""
    reply = json.loads(json.dumps(reply))
    meta = (reply.get("result") or {}).get("_meta", {}).get("mcp-tool-search/search")
    if isinstance(meta, dict):
        meta.pop("search_id", None)
    return reply


def serve(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class MakePlayground:
    """`make playground` with the site already built (`-o playground-build`) on a free port, in
    a process group of its own as a terminal starts it."""

    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["make", "--no-print-directory", "-o", "playground-build", "playground",
             f"PLAYGROUND_PORT={self.port}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        want = f"Playground: http://127.0.0.1:{self.port}/   (Ctrl-C stops it)"
        timer = threading.Timer(60, self.stop)
        timer.start()
        printed = []
        for line in self.proc.stdout:
            printed.append(line.rstrip("\n"))
            if printed[-1] == want:
                break
        timer.cancel()
        check(want in printed, f"make playground printed {printed}, not {want!r}")
        self.url = want.split()[1]
        deadline = time.monotonic() + 20
        while not listening(self.port):
            check(self.proc.poll() is None and time.monotonic() < deadline,
                  f"make playground printed {self.url} and serves nothing there")
            time.sleep(0.1)

    def stop(self):
        """Stops the group as Ctrl-C stops it: make and the server it runs. SIGTERM, whose
        default action both take: SIGINT may be ignored here, as in any process a
        non-interactive shell started in the background (POSIX), and stays ignored in them."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=20)

    shutdown = stop


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def browser():
    # The Debian binaries, named explicitly: Selenium Manager then has nothing to download.
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1500,1250"]:
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)


def native_answer(tool, config, arguments, headers=(), list_path=None):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(config)
    try:
        list_path = list_path or str(ROOT / "testdata/metatool/tools.jsonl")
        cmd = [tool, "--config", f.name, "--list", list_path, "--search", json.dumps(arguments)]
        for h in headers:
            cmd += ["--header", h]
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    finally:
        os.unlink(f.name)


def native_config_message(tool, config):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(config)
    try:
        out = subprocess.run([tool, "--config", f.name, "--check-config"], check=True,
                             capture_output=True, text=True).stdout
        return out.strip()
    finally:
        os.unlink(f.name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch_from_endpoint(driver, wait, args):
    """The page lists a real MCP server's tools itself (FastMCP behind CORS), and searches them
    as the filter does."""
    port = free_port()
    peer = subprocess.Popen([args.mcp_python, str(ROOT / "playground/tests/peers/cors_server.py"),
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if peer.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"MCP peer did not start: {peer.stderr.read().decode()}")
                time.sleep(0.1)
        set_text(driver, "config", "{}")
        set_text(driver, "query", "")
        set_text(driver, "list", "")
        set_text(driver, "endpoint", f"http://127.0.0.1:{port}/mcp")
        driver.find_element(By.ID, "fetch").click()
        WebDriverWait(driver, 20, ignored_exceptions=RENDERED_AGAIN).until(
            lambda d: d.find_element(By.ID, "list").get_attribute("value")
            or d.find_element(By.ID, "list-error").text,
            "the page neither fetched the tools nor said why")
        check(not driver.find_element(By.ID, "list-error").text,
              driver.find_element(By.ID, "list-error").text)
        wait.until(lambda d: "of 3 upstream tools" in
                   " ".join(e.text for e in d.find_elements(By.CSS_SELECTOR, "#agent .tokens")))
        fetched = driver.find_element(By.ID, "list").get_attribute("value")
        check(json.loads(fetched)["tools"][0]["name"] == "calendar_create_event", fetched[:200])
        set_text(driver, "query", "weather in Paris")
        answer = wait_for_answer(driver, wait)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(fetched)
        try:
            want = native_answer(args.filter_answer, "{}", {"query": "weather in Paris"}, list_path=f.name)
        finally:
            os.unlink(f.name)
        check(unidentified(answer) == unidentified(want), f"fetched catalog: page differs from the filter:\n{answer}\n{want}")
        check(rows(driver)[:1] == ["weather_forecast"], f"fetched catalog: {rows(driver)}")
    finally:
        peer.terminate()
        peer.wait(timeout=10)


def set_text(driver, element_id, text):
    # Typing a whole catalog key by key would take minutes; set the value and fire `input`.
    driver.execute_script(
        "const e = document.getElementById(arguments[0]); e.value = arguments[1];"
        "e.dispatchEvent(new Event('input'));", element_id, text)


def page_answer(driver):
    return json.loads(driver.find_element(By.ID, "answer").get_attribute("textContent"))


def rows(driver):
    return [r.find_elements(By.TAG_NAME, "td")[1].text
            for r in driver.find_elements(By.CSS_SELECTOR, "#results tbody tr")]


def wait_for_answer(driver, wait, previous=None):
    wait.until(lambda d: d.find_element(By.ID, "answer").get_attribute("textContent").strip()
               not in ("", previous))
    time.sleep(0.3)  # the debounced redraw settles
    return page_answer(driver)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--site", required=True)
    parser.add_argument("--make", action="store_true",
                        help="serve the site with `make playground` (already built) and check what it prints")
    parser.add_argument("--filter-answer", required=True)
    parser.add_argument("--screenshot")
    parser.add_argument("--mcp-python", help="a Python with the MCP SDK 1.x: also fetch a catalog from a server")
    args = parser.parse_args()
    started = time.monotonic()
    if args.make:
        server = MakePlayground()
        page = server.url
    else:
        server = serve(pathlib.Path(args.site))
        page = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    driver = browser()
    try:
        wait = WebDriverWait(driver, 20, ignored_exceptions=RENDERED_AGAIN)
        driver.get(page)
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")

        # Load a sample: the agent sees the search tool only, the whole catalog hidden.
        Select(driver.find_element(By.ID, "sample")).select_by_value("samples/metatool-tools.jsonl")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#agent table.listed tbody tr"))
        listed = [r.find_elements(By.TAG_NAME, "td")[0].text
                  for r in driver.find_elements(By.CSS_SELECTOR, "#agent table.listed tbody tr")]
        check(listed == ["tool_search"], f"listed: {listed}")
        summary = driver.find_element(By.CSS_SELECTOR, "#agent .tokens").text
        check("199 of 199 upstream tools not listed" in summary, summary)

        # Search: the page's answer is the filter's, and the table ranks the answer's tools.
        driver.find_element(By.ID, "query").send_keys(QUERY)
        answer = wait_for_answer(driver, wait)
        want = native_answer(args.filter_answer, "{}", {"query": QUERY})
        check(unidentified(answer) == unidentified(want), f"page answer differs from the filter's:\n{answer}\n{want}")
        names = [t["name"] for t in json.loads(answer["result"]["content"][0]["text"])]
        check(rows(driver) == names, f"table {rows(driver)} vs answer {names}")
        check(names[0] == TOP, f"top result {names[0]}, expected {TOP}")
        why = driver.find_element(By.CSS_SELECTOR, "#results tbody tr td:nth-child(5)").text
        check("name" in why or "description" in why, f"no explain breakdown: {why}")

        # Paging: the next page as the filter answers it.
        previous = driver.find_element(By.ID, "answer").get_attribute("textContent").strip()
        set_text(driver, "offset", "5")
        answer = wait_for_answer(driver, wait, previous)
        want = native_answer(args.filter_answer, "{}", {"query": QUERY, "offset": 5})
        check(unidentified(answer) == unidentified(want), f"offset 5: page differs from the filter:\n{answer}\n{want}")
        set_text(driver, "offset", "")

        # Insights pasted beside the catalog: what agents called most, and one click that makes
        # the suggested tool eager; the agent's list then shows it.
        insights = {"insights": {"upstream": {
            "zero_result_queries": [{"group": "aa11", "count": 2, "query": "rotate the api keys"}],
            "called_without_search": [], "never_returned": {"count": 0, "tools": []},
            "suggested_eager": {"share": 0.8, "tools": [
                {"name": TOP, "calls": 8, "share": 0.8, "eager": False}]},
            "auto_mode": {"mode": "search", "search_threshold": 40, "tools": 199, "decides": "search"}}}}
        driver.execute_script("document.getElementById('insights-box').open = true;")
        set_text(driver, "insights", json.dumps(insights))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#insights-view table.suggested tbody tr"))
        cells = [td.text for td in
                 driver.find_elements(By.CSS_SELECTOR, "#insights-view table.suggested tbody tr td")]
        check(cells[:1] == [TOP] and cells[3:5] == ["no", "yes"], f"suggested: {cells}")
        driver.find_element(By.ID, "make-eager").click()
        listed_names = lambda d: [r.find_elements(By.TAG_NAME, "td")[0].text
                                  for r in d.find_elements(By.CSS_SELECTOR, "#agent table.listed tbody tr")]
        wait.until(lambda d: TOP in listed_names(d))
        config = json.loads(driver.find_element(By.ID, "config").get_attribute("value"))
        check(config == {"tools": [{"name": TOP, "disclosure_mode": "EAGER"}]}, f"config: {config}")
        set_text(driver, "insights", "")
        set_text(driver, "config", "{}")

        # Per caller under a policy.
        policy = json.dumps(POLICY_CONFIG, indent=2)
        set_text(driver, "config", policy)
        set_text(driver, "callers", "support\nintern")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#agent .caller")) == 2)
        Select(driver.find_element(By.ID, "search-caller")).select_by_value("support")
        driver.execute_script("document.getElementById('search-caller').dispatchEvent(new Event('change'))")
        time.sleep(0.5)
        answer = page_answer(driver)
        want = native_answer(args.filter_answer, policy, {"query": QUERY}, ["x-user-roles: support"])
        check(unidentified(answer) == unidentified(want), f"support: page differs from the filter:\n{answer}\n{want}")

        if args.screenshot:
            set_text(driver, "callers", "")
            set_text(driver, "config", json.dumps({"eager_patterns": ["Research*", "*Weather*"]}, indent=2))
            time.sleep(0.6)
            driver.execute_script("for (const d of document.querySelectorAll('#answer-box')) d.open = false;")
            driver.save_screenshot(args.screenshot)

        # A bad configuration shows the parser's own message, word for word.
        set_text(driver, "config", BAD_CONFIG)
        error = driver.find_element(By.ID, "config-error")
        wait.until(lambda d: error.is_displayed())
        message = native_config_message(args.filter_answer, BAD_CONFIG)
        check(error.text == message, f"page says {error.text!r}, the parser {message!r}")
        check(message.startswith("plugin configuration field `search.max_allowable_results` is 0"), message)
        check(not driver.find_elements(By.CSS_SELECTOR, "#results tbody tr"), "results kept under a bad config")

        if args.mcp_python:
            fetch_from_endpoint(driver, wait, args)
        else:
            print("browser test: no --mcp-python, so fetching from an MCP endpoint was not tried")
    finally:
        driver.quit()
        server.shutdown()
    if args.make:
        check(not listening(server.port), f"make playground's port {server.port} still served once stopped")
    print(f"browser test: ok ({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"browser test: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
