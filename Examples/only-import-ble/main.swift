import BLE

// A program with one import, `BLE`, that does what an application does on the embedded simulated world: it serves
// a GATT service, scans for it, connects, reads, writes, subscribes, pairs with a passkey, and checks each outcome.
// ExamplesTests runs it and expects every "ok" line and an exit status of 0; any failed check stops it with a fatal
// error. It is the proof that `import BLE` is enough: nothing here names a type of the lower modules' own.

/// Stops the program with a message on standard error when `condition` is false.
func check(_ condition: Bool, _ what: String) {
    guard condition else { fatalError("FAILED: \(what)") }
    print("ok: \(what)")
}

/// The passkey the peripheral shows, for the central's user to type.
actor Screen {
    var shown: UInt32?
    func show(_ passkey: UInt32) { shown = passkey }
}

/// The peripheral's user: consents and shows the passkey on the screen.
struct DisplayingAgent: PairingAgent {
    let screen: Screen
    func acceptPairing(from peer: LEAddress) async -> Bool { true }
    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async { await screen.show(passkey) }
    func enterPasskey(for peer: LEAddress) async -> UInt32? { nil }
    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool { true }
}

/// The central's user: types what the peripheral's screen shows.
struct TypingAgent: PairingAgent {
    let screen: Screen
    func acceptPairing(from peer: LEAddress) async -> Bool { true }
    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async {}
    func enterPasskey(for peer: LEAddress) async -> UInt32? {
        for _ in 0..<100 {
            if let passkey = await screen.shown { return passkey }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool { false }
}

let service: BluetoothUUID = 0xFFA0
let counter: BluetoothUUID = 0xFFA1      // read and notify, stored by the server
let note: BluetoothUUID = 0xFFA2         // read and write, answered by this program
let secret: BluetoothUUID = 0xFFA3       // read, only over an authenticated link

// A watchdog: a hang is a failure too.
let watchdog = Task {
    try await Task.sleep(for: .seconds(60))
    fatalError("FAILED: timed out")
}

// MARK: The peripheral

let screen = Screen()
let peripheralAdapter = await Adapter(.virtual, security: SecurityConfiguration(ioCapability: .displayOnly, mitm: true))
check(await peripheralAdapter.state == .poweredOn, "the peripheral's adapter is powered on")
let manager = await PeripheralManager(adapter: peripheralAdapter, deviceName: "OnlyBLE")
await peripheralAdapter.setPairingAgent(DisplayingAgent(screen: screen))
let handles = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
    GATTCharacteristicDefinition(uuid: counter, properties: [.read, .notify], value: [1]),
    GATTCharacteristicDefinition(uuid: note, properties: [.read, .write], permissions: [.readable, .writeable],
                                 source: .application),
    GATTCharacteristicDefinition(uuid: secret, properties: .read, permissions: [.readable, .readAuthenticationRequired],
                                 value: [3]),
]))
check(!handles.isEmpty, "the service is published")
let centralEvents = await manager.centralEvents()
let requests = await manager.requests()
let answering = Task {
    var stored: [UInt8] = []
    for await request in requests {
        guard case .application(let asked) = request.kind else { continue }
        switch asked.kind {
        case .read: await asked.respond(with: stored)
        case .write(let value, _):
            stored = value
            await asked.accept()
        case .preparedWrites: await asked.refuse(ATTErrorCode(rawValue: 0x80))
        }
    }
}
try await manager.startAdvertising(name: "OnlyBLE", serviceUUIDs: [service])

// MARK: The central

let centralAdapter = await Adapter(.virtual, security: SecurityConfiguration(ioCapability: .keyboardOnly, mitm: true))
await centralAdapter.setPairingAgent(TypingAgent(screen: screen))
let central = Central(adapter: centralAdapter)
check(await central.state == .poweredOn, "the central is powered on")

var found: DiscoveredPeripheral?
for try await device in try await central.scan(services: [service], timeout: .seconds(10)) where device.name == "OnlyBLE" {
    found = device
    break
}
guard let found else { fatalError("FAILED: the peripheral was not found") }
check(found.serviceUUIDs.contains(service) && found.isConnectable, "the scan finds the advertised service")

let remote = try await central.connect(found)
check(await remote.state == .connected, "the central connects")

let services = try await remote.discoverServices([service])
check(services.count == 1, "the service is discovered")
let characteristics = try await remote.discoverCharacteristics(for: services[0])
func characteristic(_ uuid: BluetoothUUID) -> GATTCharacteristic {
    guard let found = characteristics.first(where: { $0.uuid == uuid }) else { fatalError("FAILED: no \(uuid)") }
    return found
}
check(characteristics.count == 3, "its three characteristics are discovered")

check(try await remote.readValue(for: characteristic(counter)) == [1], "a stored value reads back")
try await remote.writeValue([4, 2], for: characteristic(note), type: .withResponse)
check(try await remote.readValue(for: characteristic(note)) == [4, 2], "the application answers a write and a read")

let values = try await remote.notifications(for: characteristic(counter))
let reached = try await manager.updateValue([9], for: counter)
check(reached.count == 1, "the update reaches the subscribed central")
var notified: [UInt8]?
for await value in values {
    notified = value
    break
}
check(notified == [9], "the central is notified")

// MARK: Pairing

let security = try await remote.pair(mitm: true)
check(security.isEncrypted && security.isAuthenticated && security.isBonded, "passkey pairing gives an authenticated bond")
check(try await remote.readValue(for: characteristic(secret)) == [3], "an authenticated read succeeds after pairing")
var sawPairing = false
for await event in centralEvents {
    if case .paired(_, let outcome) = event {
        sawPairing = outcome.method == .passkeyEntry(initiatorInputs: true, responderInputs: false) && outcome.bonded
        break
    }
}
check(sawPairing, "the peripheral sees the passkey pairing")
let peripheralAddress = await peripheralAdapter.address
check(try await centralAdapter.bonds().map(\.peer) == [peripheralAddress].compactMap { $0 }, "the central keeps one bond")
check(try await peripheralAdapter.bonds().count == 1, "the peripheral keeps one bond")
if let peripheralAddress {
    check(try await centralAdapter.removeBond(peripheralAddress), "the central forgets the bond")
}
check(try await centralAdapter.bonds().isEmpty, "no bond is left on the central")

// MARK: Done

let states = await remote.stateUpdates()
try await central.disconnect(remote)
var disconnected = false
for await state in states {
    if case .disconnected = state {
        disconnected = true
        break
    }
}
check(disconnected, "the central disconnects")
answering.cancel()
await centralAdapter.powerOff()
await peripheralAdapter.powerOff()
check(await centralAdapter.state == .poweredOff, "the adapters power off")
watchdog.cancel()
print("PASS")
