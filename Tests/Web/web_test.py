"""`ble web` in a real browser: Debian's Chromium, headless, driven by Playwright (never `playwright install`).

Starts `ble web --token FILE` on a free loopback port on the embedded world and checks, as a user would see them:
the token (401 without it, the cookie after ?token=), the WebSocket's Origin check, the scanner listing the world's
13 devices, an RSSI plot drawing points, a second tab, connecting to the lab device, a read, a write read back,
a malformed write refused in the page, heart-rate notifications advancing a chart, a GATT file with an error shown
at its line then fixed and heard in the scanner, the HCI trace and its btsnoop download, the controller view.
Screenshots of each view go to docs/images/web-*.png.

    python web_test.py --ble PATH/TO/ble [--images DIR] [--chromium /usr/bin/chromium]
"""
import argparse
import http.client
import json
import os
import shutil
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

EMBEDDED = ["SwiftBLELab", "SwiftBLE HRM", "SwiftBLE Battery", "SwiftBLE BPM", "SwiftBLE Thermometer", "SwiftBLE Weight",
            "SwiftBLE Body", "SwiftBLE Glucose", "SwiftBLE Clock", "SwiftBLE Band", "SwiftBLE Piano", "SwiftBLE Scale",
            "SwiftBLE Phone"]
WRITABLE = "12345678-1234-5678-1234-56789ABCDEF1"
BROKEN = """{
  "name": "Web Fixed",
  "advertising": {"name": "Web Fixed", "services": ["180F"]},
  "services": [
    {"uuid": "not-a-uuid", "characteristics": [
      {"uuid": "2A19", "properties": ["read"], "value": "64"}
    ]}
  ]
}"""
FIXED = BROKEN.replace('"not-a-uuid"', '"180F"').replace(
    '{"uuid": "2A19", "properties": ["read"], "value": "64"}',
    '{"uuid": "2A19", "properties": ["read"], "value": "64"},\n      {"uuid": "2A1A", "properties": ["read"], "readError": "0x0E"}')

checks = 0


def ok(what):
    global checks
    checks += 1
    print(f"ok {checks} {what}", flush=True)


class RawSocket:
    """A WebSocket client of a few lines (RFC 6455 text frames), to send the server what no page of its own would."""

    def __init__(self, port, token):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                           f"Origin: http://127.0.0.1:{port}\r\nCookie: ble_web_token={token}\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head
        self.buffer = b""

    def send(self, text):
        payload, mask = text.encode(), os.urandom(4)
        length = len(payload)
        header = bytes([0x81, 0x80 | length]) if length < 126 else bytes([0x81, 0x80 | 126]) + length.to_bytes(2, "big")
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("the server closed the WebSocket")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def messages(self):
        while True:
            b0, b1 = self._read(2)
            length = b1 & 0x7F
            if length == 126:
                length = int.from_bytes(self._read(2), "big")
            elif length == 127:
                length = int.from_bytes(self._read(8), "big")
            payload = self._read(length)
            if b0 & 0x0F == 1:
                yield json.loads(payload)

    def answer(self, request_id, timeout=10):
        deadline = time.monotonic() + timeout
        for m in self.messages():
            if m.get("id") == request_id and m["type"] in ("done", "error", "descriptionError"):
                return m
            if time.monotonic() > deadline:
                raise AssertionError(f"no answer to request {request_id}")

    def close(self):
        self.sock.close()


def wait_until(what, probe, timeout=15):
    """Polls probe() from Python (the page's Content-Security-Policy forbids the eval that page.wait_for_function uses)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def points(page, canvas):
    return int(page.locator(canvas).get_attribute("data-points") or "0")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ble", required=True)
    parser.add_argument("--images", default=os.path.join(os.path.dirname(__file__), "..", "..", "docs", "images"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    os.makedirs(args.images, exist_ok=True)
    started = time.monotonic()

    work = tempfile.mkdtemp(prefix="ble-web-test-")
    token = "web-test-" + os.urandom(12).hex()
    token_file = os.path.join(work, "token")
    with open(token_file, "w") as f:
        f.write(token + "\n")
    port = free_port()

    # Refused: a non-loopback address without --token.
    refused = subprocess.run([args.ble, "web", "--listen", f"0.0.0.0:{port}"], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "--token" in refused.stderr, refused.stderr
    ok("a non-loopback --listen without --token is refused: " + refused.stderr.strip().splitlines()[0][:100])

    server = subprocess.Popen([args.ble, "web", "--listen", f"127.0.0.1:{port}", "--token", token_file],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert f"http://127.0.0.1:{port}/?token={token}" in line, line
        url = f"http://127.0.0.1:{port}/?token={token}"
        ok("ble web printed the address with the token")
        run(args, url, port, token)
    finally:
        server.terminate()
        try:
            _, err = server.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            _, err = server.communicate()
        shutil.rmtree(work, ignore_errors=True)
        assert token not in err, "the token appeared in the server's log"
    ok("the server's log never shows the token")
    read_only(args)
    pairing(args, "passkey")
    pairing(args, "compare")
    print(f"ok: {checks} checks passed in {time.monotonic() - started:.1f} s", flush=True)


def run(args, url, port, token):
    base = f"http://127.0.0.1:{port}"
    for path in ["/", "/app.js", "/ws", "/trace.btsnoop", f"/?token=wrong{token}"]:
        try:
            urllib.request.urlopen(base + path, timeout=10)
            raise AssertionError(f"{path} answered without the token")
        except urllib.error.HTTPError as e:
            assert e.code == 401, (path, e.code)
    ok("every request without the token gets 401 (/, /app.js, /ws, /trace.btsnoop, a wrong token)")

    # A WebSocket handshake with the cookie but from another site: 403.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/ws", headers={"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                                        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": "http://evil.example",
                                        "Cookie": f"ble_web_token={token}"})
    status = conn.getresponse().status
    assert status == 403, status
    ok("a WebSocket handshake from another Origin gets 403")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        assert page.url == base + "/", page.url
        cookie = [c for c in context.cookies() if c["name"] == "ble_web_token"]
        assert cookie and cookie[0]["httpOnly"], cookie
        ok("?token= set an HttpOnly cookie and the address lost the token")
        expect(page.locator("#status")).to_contain_text("connected", timeout=15000)

        # Scanner: the 13 devices of the embedded world.
        rows = page.locator("#devices tbody tr[data-address]")
        expect(rows).to_have_count(len(EMBEDDED), timeout=30000)
        names = rows.locator("td:nth-child(2)").all_text_contents()
        assert sorted(names) == sorted(EMBEDDED), names
        ok(f"the scanner lists the embedded world's {len(EMBEDDED)} devices")
        page.fill("#filter-service", "180D")
        shown = rows.locator("td:nth-child(2)").all_text_contents()
        assert "SwiftBLELab" in shown and "SwiftBLE Battery" not in shown, shown
        ok(f"the service filter 180D shows {len(shown)} devices")
        page.fill("#filter-service", "")
        for name in ["SwiftBLELab", "SwiftBLE HRM"]:
            page.locator("#devices tbody tr", has_text=name).locator("input[type=checkbox]").check()
        wait_until("RSSI points", lambda: points(page, "#rssi-plot") >= 16)
        ok(f"the RSSI plot draws points ({page.locator('#rssi-plot').get_attribute('data-points')})")
        page.screenshot(path=os.path.join(args.images, "web-scanner.png"))

        # A second tab sees the same devices.
        second = context.new_page()
        second.goto(base + "/")
        expect(second.locator("#devices tbody tr[data-address]")).to_have_count(len(EMBEDDED), timeout=15000)
        ok("a second tab lists the same devices")

        # Device: connect to the lab device, read, write and read back, a bad write, heart rate.
        page.locator("#devices tbody tr", has_text="SwiftBLELab").get_by_role("button", name="Connect").click()
        expect(page.locator("#link-info")).to_contain_text("MTU", timeout=20000)
        ok("connected to SwiftBLELab: " + page.locator("#link-info").text_content())
        name_char = page.locator(".characteristic[data-uuid='2A00']")
        name_char.locator(":scope > button", has_text="Read").click()
        expect(name_char.locator(".out")).to_contain_text("SwiftBLELab", timeout=10000)
        ok("read the Device Name: " + name_char.locator(".out").text_content())
        writable = page.locator(f".characteristic[data-uuid='{WRITABLE}']")
        writable.locator(":scope > input").fill("zz")
        writable.locator(":scope > button", has_text="Write").click()
        expect(writable.locator(".out")).to_contain_text("is not hex", timeout=10000)
        ok("a malformed hex write is refused in the page: " + writable.locator(".out").text_content())
        writable.locator(":scope > input").fill("web hello")
        writable.locator(":scope > select").select_option("text")
        writable.locator(":scope > button", has_text="Write").click()
        expect(writable.locator(".out")).to_contain_text("wrote 9 bytes", timeout=10000)
        writable.locator(":scope > button", has_text="Read").click()
        expect(writable.locator(".out")).to_contain_text('"web hello"', timeout=10000)
        ok("wrote text and read it back: " + writable.locator(".out").text_content())
        hr = page.locator(".characteristic[data-uuid='2A37']")
        hr.locator(":scope > button", has_text="Subscribe").click()
        wait_until("heart-rate points", lambda: points(page, "#value-chart") >= 2, timeout=20)
        first = points(page, "#value-chart")
        wait_until("more heart-rate points", lambda: points(page, "#value-chart") >= first + 2, timeout=20)
        ok(f"heart-rate notifications advance the chart ({page.locator('#value-chart').get_attribute('data-points')} points, "
           f"last {page.locator('#last-value').text_content()[:40]!r})")
        page.select_option("#phy", "2M")
        page.get_by_role("button", name="Set PHY").click()
        expect(page.locator("#link-info")).to_contain_text("PHY TX 2M, RX 2M", timeout=10000)
        ok("the link moved to LE 2M: " + page.locator("#link-info").text_content())
        page.screenshot(path=os.path.join(args.images, "web-device.png"))

        # What no page of ours sends, on a WebSocket of its own: each refused with a message, the link unchanged.
        lab = page.locator("#link-select").input_value()
        raw = RawSocket(port, token)
        raw.send("this is not JSON")
        for m in raw.messages():
            if m["type"] == "error":
                assert m["message"] == "the request is not a JSON object", m
                break
        bad = [({"id": 901, "op": "read", "address": lab, "handle": 999}, f"{lab} has no characteristic value or descriptor at handle 0x03e7"),
               ({"id": 902, "op": "write", "address": lab, "handle": 29, "value": "0x1"}, "'0x1' is not hex (whole bytes: 0-9, a-f)"),
               ({"id": 903, "op": "read", "address": "nobody", "handle": 3}, "not connected to nobody"),
               ({"id": 904, "op": "read", "address": lab, "handle": -1}, "handle -1 is not an attribute handle (1-65535)"),
               ({"id": 905, "op": "subscribe", "address": lab, "handle": "x"}, "'handle' must be an integer")]
        for request, message in bad:
            raw.send(json.dumps(request))
            answer = raw.answer(request["id"])
            assert answer["type"] == "error" and answer["message"] == message, (request, answer)
        raw.send(json.dumps({"id": 906, "op": "read", "address": lab, "handle": 3}))
        answer = raw.answer(906)
        assert answer["type"] == "done" and answer.get("text") == "SwiftBLELab", answer
        raw.close()
        ok(f"malformed JSON, hex, handles and an unknown device are refused with a message each ({len(bad) + 1}), "
           "and the link still reads")

        # Virtual devices: a GATT file with an error at line 5, then fixed.
        page.get_by_role("button", name="Virtual devices").click()
        page.fill("#gatt-text", BROKEN)
        expect(page.locator("#gatt-error")).to_contain_text("line 5", timeout=10000)   # checked as typed
        expect(page.locator("#gutter .bad")).to_have_text("5")
        ok("the GATT file's error is shown at its line as it is typed: " + page.locator("#gatt-error").text_content())
        page.get_by_role("button", name="Serve this file").click()
        expect(page.locator("#messages")).to_contain_text("GATT file: line 5", timeout=10000)
        expect(page.locator("#virtuals li")).to_have_count(0)
        ok("serving it is refused with the same line, and nothing starts")
        page.screenshot(path=os.path.join(args.images, "web-virtual.png"))
        page.fill("#gatt-text", FIXED)
        expect(page.locator("#gatt-error")).to_have_text("valid", timeout=10000)
        expect(page.locator("#gutter .bad")).to_have_count(0)
        page.get_by_role("button", name="Serve this file").click()
        expect(page.locator("#virtuals li")).to_have_count(1, timeout=15000)
        page.get_by_role("button", name="Scanner").click()
        page.fill("#filter-name", "web fixed")
        expect(page.locator("#devices tbody tr[data-address]", has_text="Web Fixed")).to_have_count(1, timeout=15000)
        ok("the fixed file serves a device the scanner hears")
        fixed = page.locator("#devices tbody tr[data-address]", has_text="Web Fixed")
        fixed.locator("td:nth-child(2)").click()   # the raw advertising data, decoded
        expect(page.locator("#devices tr.details")).to_contain_text("Complete Local Name (0x09): 576562204669786564", timeout=5000)
        expect(page.locator("#devices tr.details")).to_contain_text('"Web Fixed"')
        ok("the raw advertising data shows its AD structures decoded")
        fixed.get_by_role("button", name="Connect").click()
        expect(page.locator("#link-info")).to_contain_text("MTU", timeout=20000)
        failing = page.locator(".characteristic[data-uuid='2A1A']")
        failing.locator(":scope > button", has_text="Read").click()
        expect(failing.locator(".out")).to_contain_text("Unlikely Error (0x0e)", timeout=10000)
        expect(failing.locator(".out")).to_have_class(re.compile("error"))
        ok("an ATT error is shown by name: " + failing.locator(".out").text_content())
        # An iBeacon from the page, heard by the scanner; a UUID that is not one is refused.
        page.get_by_role("button", name="Virtual devices").click()
        page.fill("#adv-uuid", "not-a-uuid")
        page.get_by_role("button", name="Advertise").click()
        expect(page.locator("#messages")).to_contain_text("is not a 128-bit UUID", timeout=10000)
        page.fill("#adv-uuid", "F7826DA6-4FA2-4E98-8024-BC5B71E0893E")
        page.fill("#adv-minor", "77")
        page.get_by_role("button", name="Advertise").click()
        expect(page.locator("#virtuals li", has_text="iBeacon")).to_have_count(1, timeout=15000)
        page.get_by_role("button", name="Scanner").click()
        page.fill("#filter-name", "")
        beacon = page.locator("#devices tbody tr[data-address]", has_text="F7826DA6-4FA2-4E98-8024-BC5B71E0893E")
        expect(beacon).to_have_count(1, timeout=15000)
        ok("an iBeacon started in the page is heard, decoded: " + beacon.locator("td:nth-child(8)").text_content())

        # Trace and its download, the controller.
        page.get_by_role("button", name="Trace").click()
        wait_until("trace rows", lambda: page.locator("#trace tbody tr").count() > 10)
        page.fill("#trace-filter", "ACL")
        wait_until("ACL packets in the filtered trace", lambda: page.locator("#trace tbody tr").count() > 0)
        summaries = page.locator("#trace tbody tr td:nth-child(3)").all_text_contents()
        assert all("ACL" in s for s in summaries), summaries[:5]
        assert any("L2CAP ATT opcode" in s for s in summaries), summaries[:5]
        ok(f"the live trace lists packets ({page.locator('#trace-count').text_content()}); the filter ACL keeps {len(summaries)}, "
           f"e.g. {summaries[-1]!r}")
        page.screenshot(path=os.path.join(args.images, "web-trace.png"))
        page.fill("#trace-filter", "")
        download = page.request.get(base + "/trace.btsnoop")
        assert download.status == 200 and download.body()[:8] == b"btsnoop\0", download.status
        ok(f"the btsnoop download is a btsnoop file ({len(download.body())} bytes)")
        page.get_by_role("button", name="Controller").click()
        expect(page.locator("#controller-info")).to_contain_text("HCI version")
        ok("the controller view shows what `ble info` shows")
        page.screenshot(path=os.path.join(args.images, "web-controller.png"))
        assert not errors, errors
        ok("no JavaScript errors")
        browser.close()


def pairing(args, method):
    """Pairing answered in the page, with the lab device on one of two linked virtual controllers and `ble web` on the
    other. "passkey": the device shows 123456 (`ble serve --io display --passkey 123456`), `ble web --io keyboard
    --mitm` asks for it in the page, where it is typed. "compare": both sides are `--io yesno`; the page shows the
    number the device printed and is answered Yes."""
    work = tempfile.mkdtemp(prefix="ble-web-pair-")
    logs = {name: open(os.path.join(work, name + ".log"), "w+") for name in ["controllers", "serve", "web"]}
    processes = []

    def start(name, argv):
        p = subprocess.Popen(argv, stdout=logs[name], stderr=subprocess.STDOUT, text=True)
        processes.append(p)
        return p

    def log_has(name, pattern):
        logs[name].flush()
        with open(logs[name].name) as f:
            return re.search(pattern, f.read())

    device_io = ["--io", "display", "--passkey", "123456"] if method == "passkey" else ["--io", "yesno"]
    web_io = ["--io", "keyboard", "--mitm"] if method == "passkey" else ["--io", "yesno", "--mitm"]
    try:
        start("controllers", [args.ble, "controller", "--tcp", "127.0.0.1:0", "--tcp", "127.0.0.1:0"])
        ports = wait_until("the controllers", lambda: log_has("controllers", r"READY (\d+) (\d+)"), timeout=30).groups()
        # Bonds in files of the test's own (a TCP controller's default is the user's bond store).
        start("serve", [args.ble, "serve", *device_io, "--hci", f"tcp:127.0.0.1:{ports[0]}",
                        "--bonds", os.path.join(work, "serve-bonds.json")])
        wait_until("the lab device", lambda: log_has("serve", "serving"), timeout=30)
        port = free_port()
        start("web", [args.ble, "web", *web_io, "--hci", f"tcp:127.0.0.1:{ports[1]}", "--listen", f"127.0.0.1:{port}",
                      "--bonds", os.path.join(work, "web-bonds.json")])
        wait_until("ble web", lambda: log_has("web", "ble web: open"), timeout=30)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")
            row = page.locator("#devices tbody tr", has_text="SwiftBLELab")
            expect(row).to_have_count(1, timeout=20000)
            row.get_by_role("button", name="Connect").click()
            expect(page.locator("#link-info")).to_contain_text("MTU", timeout=20000)
            page.locator("#pair").click()
            expect(page.locator("#pairing")).to_be_visible(timeout=10000)
            if method == "passkey":
                expect(page.locator("#pairing-text")).to_contain_text("type the passkey")
                page.screenshot(path=os.path.join(args.images, "web-pairing.png"))
                page.fill("#pairing-passkey", "123456")
            else:
                shown = wait_until("the device's number", lambda: log_has("serve", r"show (\d{6})\?"), timeout=10).group(1)
                expect(page.locator("#pairing-text")).to_contain_text(f"does it show {shown}?")
                expect(page.locator("#pairing-passkey")).to_be_hidden()
            page.locator("#pairing-ok").click()
            try:
                expect(page.locator("#link-info")).to_contain_text("authenticated", timeout=15000)
            except AssertionError:
                raise AssertionError("not paired; the page says: " + " | ".join(page.locator("#messages div").all_text_contents()))
            expect(page.locator("#pairing")).to_be_hidden()
            what = "passkey pairing typed in the page" if method == "passkey" else "numeric comparison confirmed in the page"
            ok(f"{what}: " + page.locator("#link-info").text_content())
            secret = page.locator(".characteristic[data-uuid='12345678-1234-5678-1234-56789ABCDEFB']")
            secret.locator(":scope > button", has_text="Read").click()
            expect(secret.locator(".out")).to_contain_text('"authenticated"', timeout=10000)
            ok("the characteristic that needs an authenticated link reads: " + secret.locator(".out").text_content())
            browser.close()
    finally:
        for p in reversed(processes):
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        for log in logs.values():
            log.close()
        shutil.rmtree(work, ignore_errors=True)


def read_only(args):
    """`--read-only`: the page hides the write controls, and the server refuses a write the page sends anyway."""
    port = free_port()
    server = subprocess.Popen([args.ble, "web", "--read-only", "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert "(read-only)" in line, line
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            expect(page.locator("#status")).to_contain_text("read-only", timeout=15000)
            expect(page.locator("#start-gatt")).to_be_hidden()
            page.locator("#start-gatt").dispatch_event("click")   # the hidden button, clicked anyway
            expect(page.locator("#messages")).to_contain_text("refused: this server was started with --read-only", timeout=10000)
            expect(page.locator("#virtuals li")).to_have_count(0)
            ok("--read-only hides the write controls and the server refuses a virtual device: "
               + page.locator("#messages div").first.text_content())
            browser.close()
    finally:
        server.terminate()
        try:
            server.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:   # a failed expectation or a Playwright timeout: its message, without pages of page text
        print(f"FAIL: {str(e)[:3000]}", flush=True)
        sys.exit(1)
