#!/usr/bin/env python3
"""An independent MQTT client (paho-mqtt) that watches and drives `ble gateway` in swift-ble's interop tests.

    mqtt_observer.py --port PORT MODE [options]

Modes (each prints 'MSG <topic> <payload>' for every message on swift-ble/# and homeassistant/#, then RESULT lines;
the first failure prints 'FAILED: <why>' and exits 1; 'RESULT done=1' and exit 0 at the end):
  presence  --gateways A,B,C --device ADDRESS --seconds N: the sequence of presence decisions of the device
            ('RESULT presence=A,B,C'), who published each change ('RESULT one_publisher_per_change=1': every
            decision is published once, by the gateway it names), and the offline status of every gateway.
  devices   --gateway ID --names N1,N2,... --seconds N: each named device's record (RESULT record_NAME=1 with its
            services), beacon records decoded (RESULT beacon=<id>), Home Assistant configs (RESULT ha_distance=1).
  command   --gateway ID --device NAME --read UUID --write UUID --value HEX --notify UUID: a session of requests
            through the broker; each response checked (RESULT <op>=ok), notifications counted, malformed requests
            answered with errors.
  account   --gateway ID --seconds N: a persistent QoS 1 session that counts every device record's 'seq' until the
            gateway's final stats ("final":true, published as it stops), then compares with them: RESULT lost_silently=0 when every reading
            numbered up to 'readings' was received or counted in 'dropped'.
"""
import argparse, json, sys, threading, time

import paho.mqtt.client as mqtt


PRINTING = threading.Lock()


def out(line):
    """One whole line: paho's thread prints MSG lines while the main thread prints RESULT lines."""
    with PRINTING:
        sys.stdout.write(line + '\n')
        sys.stdout.flush()


def fail(why):
    out(f'FAILED: {why}')
    sys.exit(1)


class Observer:
    def __init__(self, port, client_id, clean=True):
        self.messages = []            # (time, topic, payload text, retain)
        self.lock = threading.Condition()
        self.connected = threading.Event()
        self.connections = 0
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean)
        self.client.on_connect = self.on_connect
        self.client.on_message = self.on_message
        self.client.on_subscribe = self.on_subscribe
        self.subscribed = threading.Event()
        self.client.reconnect_delay_set(min_delay=1, max_delay=1)
        self.client.connect('127.0.0.1', port, keepalive=30)
        self.client.loop_start()
        if not self.connected.wait(10) or not self.subscribed.wait(10):
            fail('no connection to the broker, or no subscription')
        out('SUBSCRIBED')   # the scenario starts the gateways after this line

    def on_connect(self, client, userdata, flags, reason_code, properties):
        self.connections += 1
        client.subscribe([('swift-ble/#', 1), ('homeassistant/#', 1)])
        self.connected.set()

    def on_subscribe(self, client, userdata, mid, reason_codes, properties):
        self.subscribed.set()

    def on_message(self, client, userdata, message):
        text = message.payload.decode('utf-8', errors='replace')
        out(f'MSG {message.topic} {text}')
        with self.lock:
            self.messages.append((time.monotonic(), message.topic, text, message.retain))
            self.lock.notify_all()

    def wait_for(self, predicate, seconds):
        """The first message (topic, text) for which predicate holds, waiting up to seconds; None otherwise."""
        deadline = time.monotonic() + seconds
        with self.lock:
            while True:
                for _, topic, text, _ in self.messages:
                    if predicate(topic, text):
                        return topic, text
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.lock.wait(left)

    def publish(self, topic, payload):
        self.client.publish(topic, payload, qos=1).wait_for_publish(5)

    def stop(self):
        self.client.loop_stop()
        self.client.disconnect()


def result(key, value):
    out(f'RESULT {key}={value}')


def presence(args):
    o = Observer(args.port, 'observer-presence')
    gateways = args.gateways.split(',')
    for g in gateways:
        if not o.wait_for(lambda t, p: t == f'swift-ble/{g}/status' and p == 'online', 15):
            fail(f'{g} never online')
    result('online', len(gateways))
    time.sleep(args.seconds)
    topic = f'swift-ble/presence/{args.device}'
    with o.lock:
        decisions = [json.loads(p) for _, t, p, _ in o.messages if t == topic and p]
    result('presence', ','.join(d['gateway'] for d in decisions))
    # A change is one message: no two consecutive decisions name the same gateway (nobody republished it).
    repeats = sum(1 for a, b in zip(decisions, decisions[1:]) if a['gateway'] == b['gateway'])
    result('one_publisher_per_change', 1 if repeats == 0 else 0)
    # Every gateway published its view of the device.
    with o.lock:
        viewers = sorted({t.split('/')[1] for _, t, _, _ in o.messages if t.endswith(f'/rssi/{args.device}')})
    result('views', ','.join(viewers))
    for g in gateways:
        if not o.wait_for(lambda t, p: t == f'swift-ble/{g}/status' and p == 'offline', args.offline_wait):
            fail(f'{g} never offline')
    result('offline', len(gateways))
    o.stop()
    result('done', 1)


def devices(args):
    o = Observer(args.port, 'observer-devices')
    g = args.gateway
    for name in args.names.split(','):
        hit = o.wait_for(lambda t, p: t.startswith(f'swift-ble/{g}/devices/') and f'"name":"{name}"' in p, args.seconds)
        if not hit:
            fail(f'no record of {name}')
        record = json.loads(hit[1])
        result(f'record_{name.replace(" ", "_")}', ','.join(record.get('services', [])))
    hit = o.wait_for(lambda t, p: t.startswith(f'swift-ble/{g}/devices/') and '"beacon":' in p, args.seconds)
    if not hit:
        fail('no beacon record')
    record = json.loads(hit[1])
    result('beacon', record['beacon']['id'])
    result('beacon_distance', 1 if isinstance(record.get('distance_m'), (int, float)) else 0)
    hit = o.wait_for(lambda t, p: t.startswith('homeassistant/sensor/') and t.endswith('/distance/config'), 5)
    if not hit:
        fail('no Home Assistant distance sensor')
    config = json.loads(hit[1])
    result('ha_distance', 1 if config.get('availability_topic') == f'swift-ble/{g}/status'
           and config.get('state_topic', '').startswith(f'swift-ble/{g}/devices/') else 0)
    o.stop()
    result('done', 1)


def command(args):
    o = Observer(args.port, 'observer-command')
    g = args.gateway
    if not o.wait_for(lambda t, p: t == f'swift-ble/{g}/status' and p == 'online', 15):
        fail('gateway never online')

    def ask(request, seconds=20):
        o.publish(f'swift-ble/{g}/command', request if isinstance(request, str) else json.dumps(request))
        rid = request['id'] if isinstance(request, dict) else '_'
        hit = o.wait_for(lambda t, p: t == f'swift-ble/{g}/response/{rid}', seconds)
        if not hit:
            fail(f'no response to {request}')
        return json.loads(hit[1])

    def ok(request, key):
        response = ask(request)
        if response.get('ok') is not True:
            fail(f'{key}: {response}')
        result(key, 'ok')
        return response

    ok({'id': 'c1', 'op': 'connect', 'device': args.device}, 'connect')
    found = ok({'id': 'c2', 'op': 'discover', 'device': args.device}, 'discover')
    result('services', len(found['services']))
    read = ok({'id': 'c3', 'op': 'read', 'device': args.device, 'characteristic': args.read}, 'read')
    result('read_value', bytes.fromhex(read['value']).decode(errors='replace'))
    ok({'id': 'c4', 'op': 'write', 'device': args.device, 'characteristic': args.write, 'value': args.value,
        'withResponse': True}, 'write')
    back = ok({'id': 'c5', 'op': 'read', 'device': args.device, 'characteristic': args.write}, 'read_back')
    result('written', 1 if back['value'] == args.value.lower() else 0)
    sub = ok({'id': 'c6', 'op': 'subscribe', 'device': args.device, 'characteristic': args.notify}, 'subscribe')
    topic = sub['topic']
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with o.lock:
            count = sum(1 for _, t, _, _ in o.messages if t == topic)
        if count >= 2:
            break
        time.sleep(0.1)
    result('notifications', 1 if count >= 2 else 0)
    with o.lock:
        first = next((p for _, t, p, _ in o.messages if t == topic), '{}')
    result('notification_decoded', json.loads(first).get('decoded', {}).get('type', 'none'))
    ok({'id': 'c7', 'op': 'unsubscribe', 'device': args.device, 'characteristic': args.notify}, 'unsubscribe')
    missing = ask({'id': 'c8', 'op': 'read', 'device': args.device, 'characteristic': 'FFFF'})
    result('missing_characteristic', missing.get('error', {}).get('code'))
    bad = ask({'id': 'c9', 'op': 'launch', 'device': args.device})
    result('unknown_op', bad.get('error', {}).get('code'))
    junk = ask('{"id": ', 10)
    result('junk', junk.get('error', {}).get('code'))
    ok({'id': 'c10', 'op': 'disconnect', 'device': args.device}, 'disconnect')
    o.stop()
    result('done', 1)


def account(args):
    o = Observer(args.port, 'observer-account', clean=False)
    g = args.gateway
    if not o.wait_for(lambda t, p: t == f'swift-ble/{g}/status' and p == 'online', 15):
        fail('gateway never online')
    # Until the gateway stops (after the broker's restart): its final counters. (The broker itself publishes the
    # gateway's Will, offline, when it stops with the gateway connected; that offline is no end.)
    if not o.wait_for(lambda t, p: t == f'swift-ble/{g}/stats' and '"final":true' in p, args.seconds):
        fail('no final stats from the gateway')
    with o.lock:
        seqs = {json.loads(p)['seq'] for _, t, p, _ in o.messages if t.startswith(f'swift-ble/{g}/devices/')}
        stats = [json.loads(p) for _, t, p, _ in o.messages if t == f'swift-ble/{g}/stats' and '"final":true' in p]
    if not stats:
        fail('no stats')
    final = stats[-1]
    readings, dropped = final['readings'], final['dropped']
    missing = [s for s in range(1, readings + 1) if s not in seqs]
    out(f'readings {readings}, received {len(seqs)}, missing {len(missing)}, dropped {dropped}, '
        f'gateway connections {final["broker_connections"]}, observer connections {o.connections}')
    result('reconnected', 1 if final['broker_connections'] >= 2 else 0)
    result('readings_enough', 1 if readings >= args.minimum else 0)
    result('lost_silently', max(0, len(missing) - dropped))
    result('dropped_counted', 1 if (dropped > 0) == args.expect_drops else 0)
    o.stop()
    result('done', 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--port', type=int, required=True)
    p.add_argument('mode', choices=['presence', 'devices', 'command', 'account'])
    p.add_argument('--gateways', default='')
    p.add_argument('--gateway', default='gw')
    p.add_argument('--device', default='')
    p.add_argument('--names', default='')
    p.add_argument('--seconds', type=float, default=15)
    p.add_argument('--offline-wait', type=float, default=15)
    p.add_argument('--read', default='2A29')
    p.add_argument('--write', default='')
    p.add_argument('--value', default='')
    p.add_argument('--notify', default='2A37')
    p.add_argument('--minimum', type=int, default=10)
    p.add_argument('--expect-drops', action='store_true')
    args = p.parse_args()
    {'presence': presence, 'devices': devices, 'command': command, 'account': account}[args.mode](args)


if __name__ == '__main__':
    main()
