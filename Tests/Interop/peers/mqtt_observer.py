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
  fleet     --gateway ID --seconds N --expect 'NAME[@SERVICE]=PATH,PATH' ...: each named device's record (by its
            advertised name, or by SERVICE among its advertised services) and, on the same device topic, records whose 'values' hold every PATH (e.g.
            heart_rate_measurement.bpm) as a number or string: RESULT values_NAME=PATH,PATH (the paths found, in the
            order given; an empty PATH list checks the record and its services only: RESULT services_NAME=UUID,...);
            then for each number PATH whose Home Assistant sensor exists, that the sensor's state topic is the topic
            where the value was seen: RESULT ha_state_topics=1.
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


def value_at(record, path):
    node = record.get('values', {})
    for part in path.split('.'):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, (int, float, str)) and not isinstance(node, bool) else None


def fleet(args):
    o = Observer(args.port, 'observer-fleet')
    g = args.gateway
    prefix = f'swift-ble/{g}/devices/'
    deadline = time.monotonic() + args.seconds
    topics = {}
    for spec in args.expect:
        name, _, paths = spec.partition('=')
        name, _, service = name.partition('@')
        paths = [p for p in paths.split(',') if p]

        def heard(t, p):
            # By name; or by a service it alone advertises, for a name only in a scan response that a controller
            # does not pass on (Bumble's answers a scan request with the advertising data: Tests/Interop/README.md).
            return t.startswith(prefix) and (f'"name":"{name}"' in p or (service and f'"{service}"' in p))
        hit = o.wait_for(heard, max(0.1, deadline - time.monotonic()))
        if not hit:
            fail(f'no record of {name}')
        topic = hit[0]
        topics[name] = topic
        key = name.replace(' ', '_')
        if not paths:
            result(f'services_{key}', ','.join(json.loads(hit[1]).get('services', [])))
            continue

        def complete(t, p):
            return t == topic and all(value_at(json.loads(p), path) is not None for path in paths)
        found = o.wait_for(complete, max(0.1, deadline - time.monotonic()))
        if not found:
            with o.lock:
                last = [p for _, t, p, _ in o.messages if t == topic][-1:]
            fail(f'{name}: no record on {topic} with {",".join(paths)}; last: {last}')
        record = json.loads(found[1])
        out(f'{name} {topic}: ' + ', '.join(f'{path}={value_at(record, path)}' for path in paths))
        result(f'values_{key}', ','.join(paths))
    # Home Assistant: every sensor config of these devices reads a topic that carried the value it templates (the
    # configs of values that came last may still be on their way: until the deadline).
    while True:
        with o.lock:
            configs = [(t, json.loads(p)) for _, t, p, _ in o.messages if t.startswith('homeassistant/sensor/') and p]
            records = [(t, json.loads(p)) for _, t, p, _ in o.messages if t.startswith(prefix)]
        checked = 0
        for t, config in configs:
            template = config.get('value_template', '')
            state = config.get('state_topic', '')
            if "value_json['values']" not in template or state not in topics.values():
                continue
            path = '.'.join(part.strip("'") for part in template.split("value_json['values']")[1].split('}}')[0].strip()
                            .strip('[]').split("']['"))
            if not any(topic == state and value_at(r, path) is not None for topic, r in records):
                fail(f'Home Assistant sensor {t} reads {path} on {state}, which never carried it')
            if config.get('availability_topic') != f'swift-ble/{g}/status':
                fail(f'{t}: availability {config.get("availability_topic")}')
            checked += 1
        if checked >= args.minimum or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    out(f'{checked} Home Assistant sensors read values their state topics carried')
    result('ha_state_topics', 1 if checked >= args.minimum else 0)
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
    p.add_argument('mode', choices=['presence', 'devices', 'command', 'account', 'fleet'])
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
    p.add_argument('--expect', action='append', default=[])
    args = p.parse_args()
    {'presence': presence, 'devices': devices, 'command': command, 'account': account, 'fleet': fleet}[args.mode](args)


if __name__ == '__main__':
    main()
