"""`ble proxy` found over mDNS, as Home Assistant finds ESPHome nodes: run by proxy_test.py inside a network namespace
of its own (multicast is not loopback): a veth pair with 10.253.0.1 and 10.253.0.2. The proxy listens on 0.0.0.0;
python-zeroconf (aioesphomeapi's dependency) browses _esphomelib._tcp, resolves the instance (SRV, TXT, A), and
aioesphomeapi connects to the address and port found; when the proxy stops, its goodbye removes the service.
Prints one line per check.

    mdns_test.py BLE KEY_FILE KEY
"""
import asyncio
import os
import subprocess
import sys
import time

from aioesphomeapi import APIClient
from zeroconf import ServiceBrowser, ServiceStateChange, Zeroconf

SERVICE = "_esphomelib._tcp.local."
INSTANCE = "mdns-proxy._esphomelib._tcp.local."
failures = 0


def check(name, ok, detail=""):
    global failures
    failures += 0 if ok else 1
    print(f"{'ok  ' if ok else 'FAIL'} mdns: {name}{'' if ok else ': ' + str(detail)}", flush=True)


def main(ble, key_file, key):
    log_path = os.path.join(os.path.dirname(key_file), "proxy-mdns.log")
    with open(log_path, "w") as log:
        proxy = subprocess.Popen([ble, "proxy", "--listen", "0.0.0.0:6053", "--key", key_file, "--name", "mdns-proxy"],
                                 stdout=log, stderr=subprocess.STDOUT)
    zc = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "mDNS:" not in open(log_path).read() and proxy.poll() is None:
            time.sleep(0.1)
        log = open(log_path).read()
        check("the proxy announces itself", "mDNS: mdns-proxy._esphomelib._tcp.local on" in log, log[-400:])
        zc = Zeroconf()
        changes = []
        ServiceBrowser(zc, SERVICE, handlers=[lambda zeroconf, service_type, name, state_change: changes.append((name, state_change))])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(n == INSTANCE and s == ServiceStateChange.Added for n, s in changes):
            time.sleep(0.1)
        check("browsing _esphomelib._tcp finds it", any(n == INSTANCE for n, _ in changes), changes)
        info = zc.get_service_info(SERVICE, INSTANCE, timeout=5000)
        addresses = info.parsed_addresses() if info else []
        check("resolved: port 6053 and the namespace's addresses", info is not None and info.port == 6053
              and set(addresses) <= {"10.253.0.1", "10.253.0.2"} and addresses, info)
        properties = {k.decode(): (v or b"").decode() for k, v in (info.properties.items() if info else [])}
        check("TXT: the MAC, and the encryption the API needs", len(properties.get("mac", "")) == 12
              and properties.get("api_encryption") == "Noise_NNpsk0_25519_ChaChaPoly_SHA256", properties)

        async def connect():
            client = APIClient(addresses[0], info.port, None, noise_psk=key, client_info="mdns_test")
            await asyncio.wait_for(client.connect(login=False), 10)
            try:
                return (await client.device_info()).name
            finally:
                await client.disconnect()

        name = asyncio.run(connect()) if addresses else None
        check("aioesphomeapi connects to what mDNS gave", name == "mdns-proxy", name)

        proxy.terminate()
        proxy.wait(10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(s == ServiceStateChange.Removed for _, s in changes):
            time.sleep(0.1)
        check("stopping says goodbye (the service is removed)", any(n == INSTANCE and s == ServiceStateChange.Removed for n, s in changes),
              changes)
    finally:
        if zc:
            zc.close()
        if proxy.poll() is None:
            proxy.kill()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
