// interop-central: swift-ble's central for the interop scenarios, through the public async API (module BLE) only.
// It runs the same session as peers/central.py --full runs with Bumble's host, against a peripheral with the lab
// layout (peers/peripheral.py, or `ble serve`), and prints the same 'RESULT key=value' lines, the discovered GATT
// tree as 'TREE ...' lines, and 'FAILED: <step>: <why>' (exit 1) at the first step that fails or times out.
//
//     interop-central --hci tcp:127.0.0.1:PORT --target NAME [--btsnoop FILE]
//
// --btsnoop records our host's HCI traffic (the runner keeps it, and decodes it when a scenario fails). Every
// connection event is logged with its time, for the same reason.
//
// Session: scan without a filter (name, services, manufacturer data, merged scan response), with a filter no device
// matches, with a matching one; connect; MTU; full discovery; reads (300 and 512 bytes, encryption refused); writes
// with and without response; long write of 512 bytes; a 600-byte write refused; a notification burst; indications;
// heart-rate notifications; disconnect; reconnect with a reconnection policy; the peripheral disconnects (control
// point) and the policy reconnects, restoring the subscription; a final disconnect that must not reconnect.
import BLE
import BLETransport
import Foundation

let began = ContinuousClock.now
let customWritable = SampleDevice.customWritable
let customLong = SampleDevice.customLong
let customSecret = SampleDevice.customSecret
let customLongWritable = SampleDevice.customLongWritable
let customBurst = SampleDevice.customBurst
let customIndicate = SampleDevice.customIndicate
let customControl = SampleDevice.customControl

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func log(_ text: String) {
    let ms = (ContinuousClock.now - began).components
    let seconds = Double(ms.seconds) + Double(ms.attoseconds) / 1e18
    say("[swift-central \(String(format: "%7.3f", seconds))s] \(text)")
}

func result(_ key: String, _ value: Any) { say("RESULT \(key)=\(value)") }

func fail(_ what: String) -> Never {
    say("FAILED: \(what)")
    exit(1)
}

func check(_ condition: Bool, _ what: @autoclosure () -> String) {
    if !condition { fail(what()) }
}

func hex(_ v: UInt8) -> String { String(format: "0x%02X", v) }

/// Runs one step; a timeout ends the process with the step's name (a stuck await cannot be cancelled from outside).
func step<T>(_ name: String, _ seconds: Double = 10, _ body: () async throws -> T) async -> T {
    let watchdog = Task {
        try await Task.sleep(for: .seconds(seconds))
        fail("\(name): no answer within \(seconds) s")
    }
    defer { watchdog.cancel() }
    do {
        return try await body()
    } catch {
        fail("\(name): \(error)")
    }
}

/// The next value of a stream, or a failure naming `what`.
func next<T: Sendable>(_ iterator: inout AsyncStream<T>.Iterator, _ what: String) async -> T {
    guard let value = await iterator.next() else { fail("\(what): the stream ended (link lost?)") }
    return value
}

/// The next notified value, or a failure naming `what`.
func next(_ iterator: inout NotificationStream.AsyncIterator, _ what: String) async -> [UInt8] {
    guard let value = await iterator.next() else { fail("\(what): the stream ended (link lost?)") }
    return value
}

/// Every peripheral reported by `stream` during `duration`.
func collect(_ stream: AsyncThrowingStream<DiscoveredPeripheral, any Error>, for duration: Duration) async -> [DiscoveredPeripheral] {
    let consumer = Task {
        var out: [DiscoveredPeripheral] = []
        do { for try await d in stream { out.append(d) } } catch {}
        return out
    }
    try? await Task.sleep(for: duration)
    consumer.cancel()
    return await consumer.value
}

func uuidKey(_ uuid: BluetoothUUID) -> String { uuid.uuidString }

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// ---------------------------------------------------------------------------------------------------------------
func session() async {
var hci = ""
var target = "BumbleLabPeripheral"
var capture: String?
var arguments = CommandLine.arguments.dropFirst()
while let option = arguments.popFirst() {
    switch option {
    case "--hci": hci = arguments.popFirst() ?? ""
    case "--target": target = arguments.popFirst() ?? ""
    case "--btsnoop": capture = arguments.popFirst()
    default: fail("usage: interop-central --hci SPEC --target NAME (unknown option \(option))")
    }
}
let central: Central
do {
    var transport = try HCITransportSpec(parsing: hci).open()
    if let capture { transport = SnoopingTransport(transport, writer: try BTSnoopWriter(path: capture), role: .host) }
    central = try await Central(transport: transport)
} catch {
    fail("power on (--hci \(hci)): \(error)")
}
result("powered_on", 1)
// The session checks that the protected value is refused on an unencrypted link (pairing has scenarios of its own).
await central.setPairsOnDemand(false)
// Discovered databases are cached under the peer's address and validated by its Database Hash on reconnection.
await central.useGATTCache(GATTCache())
let eventLog = await central.connectionEvents()
_ = Task {
    for await event in eventLog {
        switch event {
        case .connected(let c): log("host: connected, handle \(c.handle), peer \(c.peer.address)")
        case .disconnected(let c, let reason): log("host: disconnected, handle \(c.handle), \(reason)")
        default: break
        }
    }
}

// 1. Scan without a filter: every advertisement (duplicates on), until the target's scan response merged in (its
//    second manufacturer data structure) or 2 s after the first sighting.
let sighting: DiscoveredPeripheral = await step("scan for \(target) without a filter", 12) {
    let stream = try await central.scan(services: [], allowDuplicates: true, active: true)
    var best: DiscoveredPeripheral?
    var deadline: ContinuousClock.Instant?
    for try await d in stream where d.name == target {
        best = d
        deadline = deadline ?? .now + .seconds(2)
        if d.manufacturerData.count >= 2 || ContinuousClock.now >= deadline! { break }
    }
    guard let best else { throw Failure("the scan ended") }
    return best
}
await central.stopScan()
result("scan_name", sighting.name ?? "")
result("scan_services", sighting.serviceUUIDs.map(uuidKey).joined(separator: ","))
result("scan_manufacturer", sighting.manufacturerData.map { String(format: "%04X", $0.companyID.rawValue) + ":" + $0.data.hexString() }
    .joined(separator: ","))
result("scan_connectable", sighting.isConnectable ? 1 : 0)

// 2. A filter nobody matches: nothing is reported in 2 s (the target keeps advertising).
let nobody = BluetoothUUID("9E5D0000-7A3B-4C1D-9E8F-0123456789AB") ?? 0
let unmatched = await step("scan with a filter nobody matches", 10) {
    await collect(try await central.scan(services: [nobody], allowDuplicates: true), for: .seconds(2))
}
await central.stopScan()
result("scan_nonmatching", unmatched.count)

// 3. A filter the target matches (Battery, listed in its advertising data).
let matched: DiscoveredPeripheral = await step("scan with a filter the target matches", 10) {
    for try await d in try await central.scan(services: [0x180F]) where d.name == target { return d }
    throw Failure("the scan ended")
}
await central.stopScan()
result("scan_matching", matched.address == sighting.address ? 1 : 0)

// 4. Connect, MTU, discovery.
let hostEvents = await central.connectionEvents()
var hostIterator = hostEvents.makeAsyncIterator()
let peripheral = await step("connect", 12) { try await central.connect(matched, timeout: .seconds(10)) }
result("connected", 1)
let mtu = await step("exchange MTU") { try await peripheral.exchangeMTU() }
result("mtu", mtu)
result("max_write_without_response", await peripheral.maximumWriteValueLength(for: .withoutResponse))
result("max_write_with_response", await peripheral.maximumWriteValueLength(for: .withResponse))

var characteristics: [BluetoothUUID: GATTCharacteristic] = [:]
let services = await step("discover services") { try await peripheral.discoverServices() }
for service in services {
    say("TREE service \(service.startHandle.rawValue)-\(service.endHandle.rawValue) \(uuidKey(service.uuid))")
    let found = await step("discover characteristics of \(service.uuid)") { try await peripheral.discoverCharacteristics(for: service) }
    for c in found {
        say("TREE characteristic \(c.valueHandle.rawValue) \(c.properties.rawValue) \(uuidKey(c.uuid))")
        characteristics[c.uuid] = characteristics[c.uuid] ?? c
        let descriptors = await step("discover descriptors of \(c.uuid)") { try await peripheral.discoverDescriptors(for: c) }
        for d in descriptors { say("TREE descriptor \(d.handle.rawValue) \(uuidKey(d.uuid))") }
    }
}
result("services", services.count)
// The whole-database discovery (characteristics of all services in one walk, descriptors several gaps per request)
// must find the same tree as the per-service one above.
let (whole, firstDiscovery) = await step("discover the whole database") { try await peripheral.discoverAllReporting() }
check(!firstDiscovery.fromCache, "the first discovery came from an empty cache")
var perService: [GATTDiscoveredService] = []
for service in services {
    var entries: [GATTDiscoveredCharacteristic] = []
    let found = await step("rediscover characteristics of \(service.uuid)") { try await peripheral.discoverCharacteristics(for: service) }
    for c in found {
        let descriptors = await step("rediscover descriptors of \(c.uuid)") { try await peripheral.discoverDescriptors(for: c) }
        entries.append(GATTDiscoveredCharacteristic(characteristic: c, descriptors: descriptors))
    }
    perService.append(GATTDiscoveredService(service: service, characteristics: entries))
}
check(whole == perService, "whole-database discovery differs from per-service discovery: \(whole) vs \(perService)")
func characteristic(_ uuid: BluetoothUUID) -> GATTCharacteristic {
    guard let c = characteristics[uuid] else { fail("no characteristic \(uuid) discovered") }
    return c
}

// 5. Reads.
let manufacturer = await step("read 2A29") { try await peripheral.readValue(for: characteristic(0x2A29)) }
result("manufacturer", String(decoding: manufacturer, as: UTF8.self))
let long300 = await step("long read of \(customLong)") { try await peripheral.readValue(for: characteristic(customLong)) }
check(long300 == SampleDevice.longValue, "300-byte value: got \(long300.count) bytes \(long300.prefix(16).hexString())…")
result("long_read_300", "ok")
let long512 = await step("long read of \(customLongWritable)") { try await peripheral.readValue(for: characteristic(customLongWritable)) }
check(long512 == SampleDevice.longWritableValue, "512-byte value: got \(long512.count) bytes \(long512.prefix(16).hexString())…")
result("long_read_512", "ok")
do {
    let secret = try await peripheral.readValue(for: characteristic(customSecret))
    fail("read of \(customSecret) on an unencrypted link returned \(secret.hexString())")
} catch let error as GATTError {
    guard let code = error.code.attError else { fail("read of \(customSecret): \(error)") }
    result("read_error_\(uuidKey(customSecret))", hex(code.rawValue))
} catch {
    fail("read of \(customSecret): \(error)")
}

// 6. Writes.
let writable = characteristic(customWritable)
let withResponse = Array("written-with-response".utf8)
await step("write with response") { try await peripheral.writeValue(withResponse, for: writable, type: .withResponse) }
let back = await step("read back") { try await peripheral.readValue(for: writable) }
check(back == withResponse, "write with response read back \(back.hexString())")
result("write_with_response", "ok")
let withoutResponse = Array("written-without-response".utf8)
await step("write without response") { try await peripheral.writeValue(withoutResponse, for: writable, type: .withoutResponse) }
var landed = false
for _ in 0..<50 where !landed {
    landed = await step("read back") { try await peripheral.readValue(for: writable) } == withoutResponse
    if !landed { try? await Task.sleep(for: .milliseconds(20)) }
}
check(landed, "write without response never read back")
result("write_without_response", "ok")

let longWritable = characteristic(customLongWritable)
let value512 = (0..<512).map { UInt8(truncatingIfNeeded: 13 &* $0 &+ 5) }
await step("long write of 512 bytes") { try await peripheral.writeValue(value512, for: longWritable, type: .withResponse) }
let back512 = await step("read back 512 bytes") { try await peripheral.readValue(for: longWritable) }
check(back512 == value512, "long write read back \(back512.count) bytes \(back512.prefix(16).hexString())…")
result("long_write_512", "ok")
// Core 5.4, Vol 3, Part F, 3.2.9: no attribute value is longer than 512 octets; the client refuses before sending.
do {
    try await peripheral.writeValue((0..<600).map { UInt8(truncatingIfNeeded: $0) }, for: longWritable, type: .withResponse)
    fail("a 600-byte write was accepted")
} catch let error as GATTError {
    if error.code == .invalidValueLength {
        result("long_write_600", "refused")
    } else if let code = error.code.attError {
        result("long_write_600", hex(code.rawValue))
    } else {
        fail("600-byte write: \(error)")
    }
} catch {
    fail("600-byte write: \(error)")
}
let kept = await step("read back after the 600-byte write") { try await peripheral.readValue(for: longWritable) }
result("long_write_600_kept", kept == value512 ? 1 : 0)

// 7. A burst of notifications: all of them, in order, each as long as the MTU allows.
let burst = await step("subscribe to the burst") { try await peripheral.notifications(for: characteristic(customBurst)) }
var burstIterator = burst.makeAsyncIterator()
let burstLength = min(200, mtu - 3)
for index in 0..<SampleDevice.burstCount {
    let value = await step("burst notification \(index + 1)", 5) { await next(&burstIterator, "burst notification \(index + 1)") }
    let expected = Array(SampleDevice.burstValue(index).prefix(burstLength))
    check(value == expected, "burst notification \(index + 1): \(value.count) bytes \(value.prefix(8).hexString())…, expected \(expected.prefix(8).hexString())…")
}
result("burst", SampleDevice.burstCount)
await step("unsubscribe from the burst") { try await peripheral.stopNotifications(for: characteristic(customBurst)) }

// 8. Indications (each confirmed by the stack before the peripheral sends the next).
let indications = await step("subscribe to indications") { try await peripheral.notifications(for: characteristic(customIndicate)) }
var indicationIterator = indications.makeAsyncIterator()
for index in 0..<SampleDevice.indicationCount {
    let value = await step("indication \(index + 1)", 5) { await next(&indicationIterator, "indication \(index + 1)") }
    check(value == [UInt8(index), 0], "indication \(index + 1): \(value.hexString())")
}
result("indications", SampleDevice.indicationCount)
await step("unsubscribe from indications") { try await peripheral.stopNotifications(for: characteristic(customIndicate)) }

// 9. Heart-rate notifications (sent periodically by the peripheral): consecutive values.
let heartRate = await step("subscribe to 2A37") { try await peripheral.notifications(for: characteristic(0x2A37)) }
var heartRateIterator = heartRate.makeAsyncIterator()
var previous: UInt8?
for n in 1...3 {
    let value = await step("heart rate notification \(n)", 5) { await next(&heartRateIterator, "heart rate notification \(n)") }
    check(value.count == 2 && value[0] == 0, "heart rate notification \(value.hexString())")
    if let previous { check(value[1] == previous + 1 || (previous == 99 && value[1] == 60), "heart rate order \(previous) -> \(value[1])") }
    previous = value[1]
}
result("notifications", 3)
await step("unsubscribe from 2A37") { try await peripheral.stopNotifications(for: characteristic(0x2A37)) }

// 10. Disconnect from this side.
let firstLink = await peripheral.connection.link
_ = await step("disconnect") { try await central.disconnect(peripheral) }
let reason: HCIStatus = await step("disconnection complete", 5) {
    while true {
        if case .disconnected(let c, let reason) = await next(&hostIterator, "host events"), c.link == firstLink { return reason }
    }
}
result("disconnect_reason", hex(reason.rawValue))

// 11. Reconnect, with a policy that reconnects a lost link and restores its subscriptions.
let policy = ReconnectPolicy(maximumAttempts: 10, initialDelay: .milliseconds(200), maximumDelay: .seconds(1), attemptTimeout: .seconds(5))
let again = await step("reconnect", 15) { try await central.connect(matched.address, name: target, timeout: .seconds(10), reconnect: policy) }
result("reconnected", 1)
_ = await step("exchange MTU again") { try await again.exchangeMTU() }
// The database is unchanged: reading its hash is the whole discovery.
let (cachedTree, cachedDiscovery) = await step("discover the whole database again") { try await again.discoverAllReporting() }
check(cachedTree == whole, "the cached database differs from the discovered one")
result("cached_discovery_round_trips", cachedDiscovery.fromCache ? cachedDiscovery.requests : -1)
let persisted = await step("read after reconnecting") { try await again.readValue(for: writable) }
check(persisted == withoutResponse, "after reconnecting, \(customWritable) reads \(persisted.hexString())")
result("reconnect_read", "ok")
let heartRateAgain = await step("subscribe to 2A37 again") { try await again.notifications(for: characteristic(0x2A37)) }
var heartRateAgainIterator = heartRateAgain.makeAsyncIterator()
_ = await step("heart rate after reconnecting", 5) { await next(&heartRateAgainIterator, "heart rate after reconnecting") }

// 12. The peripheral disconnects (control point); the policy reconnects and the same subscription stream goes on.
let linkEvents = await again.linkEvents()
var linkIterator = linkEvents.makeAsyncIterator()
do {
    try await again.writeValue(Array("disconnect".utf8), for: characteristic(customControl), type: .withResponse)
} catch let error as GATTError where error.code == .disconnected {
    log("the control point write's response was overtaken by the disconnection")
} catch {
    fail("write to the control point: \(error)")
}
let peerReason: HCIStatus = await step("disconnection by the peripheral", 5) {
    guard case .disconnected(let reason) = await next(&linkIterator, "link events") else { fail("expected a disconnection first") }
    return reason
}
result("peer_disconnect_reason", hex(peerReason.rawValue))
let reconnection = await step("automatic reconnection", 20) { await next(&linkIterator, "link events") }
guard case .reconnected(let attempt) = reconnection else { fail("automatic reconnection: \(reconnection)") }
log("reconnected automatically after \(attempt) attempt(s)")
result("auto_reconnected", 1)
result("reconnected_after_peer_disconnect", 1)
_ = await step("heart rate on the restored subscription", 5) { await next(&heartRateAgainIterator, "heart rate on the restored subscription") }
result("subscription_restored", 1)

// 13. Disconnect on purpose: no reconnection follows, whatever reason the controller reports.
_ = await step("final disconnect") { try await central.disconnect(again) }
try? await Task.sleep(for: .seconds(1.5))
let links = await central.adapter.connections
result("stayed_disconnected", links.isEmpty ? 1 : 0)
await central.adapter.powerOff()
result("done", 1)
}

await session()
exit(0)
