import BLE
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEWire
import BLEVirtualController
import Testing

/// Extended advertising and scanning through the public API, on the virtual air (HCI bytes on virtual controllers):
/// PHYs, large data, several sets, connections, and what a Core 4.1 controller cannot do.
@Suite(.timeLimit(.minutes(1))) struct ExtendedAdvertisingAPITests {
    static let service: BluetoothUUID = 0xFFE0

    func manager(_ air: VirtualAir, at x: Double, profile: ControllerProfile = .full, name: String) async throws -> PeripheralManager {
        let controller = air.addController(.init(position: Position(x: x), profile: profile))
        let manager = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: name)
        try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: 0xFFE1, properties: .read, value: Array(name.utf8)),
        ]))
        return manager
    }

    func central(_ air: VirtualAir, at x: Double, profile: ControllerProfile = .full) async throws -> Central {
        try await Central(transport: air.addController(.init(position: Position(x: x), profile: profile)).makeHostTransport())
    }

    static func named(_ name: String, extra: [UInt8] = []) throws -> AdvertisingData {
        let data = AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: name)
        return AdvertisingData(structures: data.structures + (try AdvertisingData(bytes: extra)).structures)
    }

    /// The devices a scan on `phys` finds within `seconds`, by name (each name's last discovery).
    func discover(_ central: Central, phys: LEPHYs, seconds: Double = 1.5) async throws -> [String: DiscoveredPeripheral] {
        let results = try await central.scan(allowDuplicates: true, timeout: .milliseconds(Int(seconds * 1000)), phys: phys)
        var found: [String: DiscoveredPeripheral] = [:]
        for try await device in results { if let name = device.name { found[name] = device } }
        return found
    }

    @Test func extendedAdvertisersOn1MAndCodedAreFoundOnlyByAScanOfTheirPHY() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let near = try await manager(air, at: 0, name: "Near")
        let far = try await manager(air, at: 1, name: "Far")
        try await near.startAdvertising(Advertisement(data: try Self.named("Near"), kind: .connectable, isExtended: true,
                                                      advertisingSID: 4, includesTxPower: true))
        try await far.startAdvertising(Advertisement(data: try Self.named("Far"), kind: .nonConnectable, isExtended: true,
                                                     primaryPHY: .leCoded))
        let central = try await central(air, at: 2)
        let on1M = try await discover(central, phys: .le1M)
        let onCoded = try await discover(central, phys: .leCoded)
        let onBoth = try await discover(central, phys: [.le1M, .leCoded])
        #expect(Set(on1M.keys) == ["Near"])
        #expect(Set(onCoded.keys) == ["Far"])
        #expect(Set(onBoth.keys) == ["Near", "Far"])
        let nearFound = try #require(onBoth["Near"])
        #expect(nearFound.primaryPHY == .le1M && nearFound.secondaryPHY == .le1M && !nearFound.isLegacy)
        #expect(nearFound.advertisingSID == 4 && nearFound.txPower == 0 && nearFound.isConnectable)
        let farFound = try #require(onBoth["Far"])
        #expect(farFound.primaryPHY == .leCoded && farFound.secondaryPHY == .leCoded && !farFound.isLegacy)
        #expect(farFound.txPower == nil && !farFound.isConnectable)
        withExtendedLifetime((near, far)) {}
    }

    @Test func aThousandOctetsOfDataArriveWhole() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let big = try await manager(air, at: 0, name: "Big")
        // Manufacturer data structures of 250 octets each (AD length fits in one octet), four of them.
        var extra: [UInt8] = []
        for i in 0..<4 { extra += [250, 0xFF, 0xFF, 0xFF] + (0..<247).map { UInt8(truncatingIfNeeded: $0 &+ i) } }
        let data = try Self.named("Big", extra: extra)
        #expect(data.encoded.count > 1000)
        try await big.startAdvertising(Advertisement(data: data, kind: .nonConnectable, isExtended: true))
        let central = try await central(air, at: 1)
        let found = try #require(try await discover(central, phys: .le1M)["Big"])
        #expect(found.advertisementData.encoded == data.encoded)
        #expect(found.manufacturerData.count == 4 && !found.isTruncated)
        withExtendedLifetime(big) {}
    }

    @Test func severalSetsRunAtOnceAndAConnectionEndsOnlyItsOwn() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let multi = try await manager(air, at: 0, name: "Multi")
        #expect(await multi.supportsExtendedAdvertising)
        #expect(await multi.maximumAdvertisingSets >= 4)
        try await multi.startAdvertising([
            Advertisement(data: try Self.named("Set Connectable"), kind: .connectable, isExtended: true, primaryPHY: .leCoded),
            Advertisement(data: try Self.named("Set Legacy Beacon"), kind: .nonConnectable),
            Advertisement(data: AdvertisingData(), scanResponse: try Self.named("Set Scannable"), kind: .scannable, isExtended: true),
        ])
        let central = try await central(air, at: 1)
        let found = try await discover(central, phys: [.le1M, .leCoded])
        #expect(Set(found.keys) == ["Set Connectable", "Set Legacy Beacon", "Set Scannable"])
        #expect(found["Set Legacy Beacon"]?.isLegacy == true && found["Set Legacy Beacon"]?.advertisingSID == nil)
        #expect(found["Set Scannable"]?.isLegacy == false)
        #expect(Set(found.values.map(\.address.address)).count == 1, "one device")

        // Connect to the LE Coded one: a link, GATT over it, and the other two sets still on the air.
        let target = try #require(found["Set Connectable"])
        let remote = try await central.connect(target)
        let service = try await remote.discoverServices([Self.service])[0]
        let characteristic = try await remote.discoverCharacteristics([0xFFE1], for: service)[0]
        #expect(try await remote.readValue(for: characteristic) == Array("Multi".utf8))
        let after = try await discover(central, phys: [.le1M, .leCoded], seconds: 0.8)
        #expect(Set(after.keys) == ["Set Legacy Beacon", "Set Scannable"])
        try await central.disconnect(remote)
        withExtendedLifetime(multi) {}
    }

    @Test func aCore41ControllerRefusesWhatItCannotDoAndStillWorksLegacy() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let old = try await manager(air, at: 0, profile: .bluetooth41, name: "Old")
        #expect(await old.supportsExtendedAdvertising == false)
        #expect(await old.maximumAdvertisingSets == 1)
        for attempt in [[Advertisement(data: try Self.named("X"), isExtended: true)],
                        [Advertisement(data: try Self.named("X"), primaryPHY: .leCoded)],
                        [Advertisement(data: try Self.named("X")), Advertisement(data: try Self.named("Y"))]] {
            await #expect {
                try await old.startAdvertising(attempt)
            } throws: { error in
                (error as? HostError)?.code == .unsupportedByController(.extendedAdvertising)
            }
        }
        let oldCentral = try await central(air, at: 1, profile: .bluetooth41)
        await #expect {
            _ = try await oldCentral.scan(phys: .leCoded)
        } throws: { error in
            (error as? HostError)?.code == .unsupportedByController(.extendedAdvertising)
        }
        // Legacy advertising from the old controller: an extended scan of a new one sees it as legacy, and connects.
        try await old.startAdvertising(name: "Old", serviceUUIDs: [Self.service])
        let newCentral = try await central(air, at: 2)
        let found = try #require(try await discover(newCentral, phys: [.le1M, .leCoded])["Old"])
        #expect(found.isLegacy && found.primaryPHY == .le1M && found.isConnectable)
        let remote = try await newCentral.connect(found)
        try await newCentral.disconnect(remote)
        // An extended advertiser is invisible to the old central; a legacy set of a new controller is not.
        let modern = try await manager(air, at: 3, name: "Modern")
        try await modern.startAdvertising([Advertisement(data: try Self.named("Modern Extended"), kind: .connectable, isExtended: true),
                                           Advertisement(data: try Self.named("Modern Legacy"), kind: .connectable)])
        let seenByOld = try await discover(oldCentral, phys: .le1M)
        #expect(seenByOld["Modern Extended"] == nil)
        let legacy = try #require(seenByOld["Modern Legacy"])
        #expect(legacy.isLegacy)
        let link = try await oldCentral.connect(legacy)
        try await oldCentral.disconnect(link)
        withExtendedLifetime((old, modern)) {}
    }

    /// What a scan says of each kind of advertisement, from a controller driven in raw HCI (the public API has no
    /// directed advertising): extended advertising directed at the scanner but not connectable is not connectable
    /// (the Directed bit alone is no ADV_DIRECT_IND); scannable is reported as such, extended connectable is not
    /// scannable, legacy ADV_IND is both. Core 5.4, Vol 4, Part E, 7.7.65.13.
    @Test func directedScannableAndConnectableKindsAreReportedAsTheAdvertiserSetThem() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let scannerController = air.addController(.init(position: Position(x: 1)))
        let central = try await Central(transport: scannerController.makeHostTransport())
        let advertiser = air.addController(.init(position: Position(x: 0)), buffered: true)
        func send<C: HCICommand>(_ command: C) { advertiser.receive(fromHost: .command(command.packet)) }
        send(HCIReset())
        let sets: [(HCILEAdvertisingEventProperties, [UInt8], [UInt8])] = [
            ([.directed], [4, 0xFF, 0xFF, 0xFF, 1], []),
            ([.directed, .scannable], [], [4, 0xFF, 0xFF, 0xFF, 2]),
            ([.connectable], [4, 0xFF, 0xFF, 0xFF, 3], []),
            (.legacyConnectableScannable, [4, 0xFF, 0xFF, 0xFF, 4], [4, 0xFF, 0xFF, 0xFF, 5]),
        ]
        for (handle, (properties, data, response)) in sets.enumerated() {
            let handle = UInt8(handle)
            send(HCILESetExtendedAdvertisingParameters(handle: handle, properties: properties, intervalMin: 0x30, intervalMax: 0x30,
                                                        peerAddress: scannerController.address, sid: handle + 1))
            if !data.isEmpty { send(HCILESetExtendedAdvertisingData(handle: handle, operation: .complete, data: data)) }
            if !response.isEmpty { send(HCILESetExtendedScanResponseData(handle: handle, operation: .complete, data: response)) }
        }
        send(HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: (0..<UInt8(sets.count)).map { .init(handle: $0) }))
        #expect(advertiser.enabledAdvertisingSets.count == sets.count)

        // Each set by the last octet of its manufacturer data (the scan response's for the scannable ones).
        var found: [UInt8: DiscoveredPeripheral] = [:]
        for try await device in try await central.scan(allowDuplicates: true, timeout: .milliseconds(1500)) {
            for mark in device.manufacturerData.compactMap(\.data.last) { found[mark] = device }
        }
        let directed = try #require(found[1])
        #expect(!directed.isConnectable && !directed.isScannable && !directed.isLegacy)
        let directedScannable = try #require(found[2])
        #expect(!directedScannable.isConnectable && directedScannable.isScannable)
        let connectable = try #require(found[3])
        #expect(connectable.isConnectable && !connectable.isScannable)
        let legacy = try #require(found[5])
        #expect(legacy.isConnectable && legacy.isScannable && legacy.isLegacy)
    }

    /// Directed advertising through the public API: only the target hears it. Legacy: ADV_DIRECT_IND without data,
    /// to which the target connects; extended: non-connectable with its data. Legacy directed must be connectable.
    @Test func directedAdvertisingIsHeardOnlyByItsTarget() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let peripheral = try await manager(air, at: 0, name: "Directed")
        let targetController = air.addController(.init(position: Position(x: 1)))
        let target = try await Central(transport: targetController.makeHostTransport())
        let bystander = try await central(air, at: 2)
        let advertiser = try #require(await peripheral.address)
        func heard(by central: Central, phys: LEPHYs = .le1M) async throws -> DiscoveredPeripheral? {
            var found: DiscoveredPeripheral?
            for try await device in try await central.scan(allowDuplicates: true, timeout: .milliseconds(1200), phys: phys)
            where device.address.address == advertiser.address { found = device }
            return found
        }

        var legacy = Advertisement(data: try Self.named("Directed"), kind: .connectable)
        legacy.target = LEAddress(targetController.address, type: .public)
        try await peripheral.startAdvertising(legacy)
        let direct = try #require(try await heard(by: target))
        #expect(direct.isLegacy && direct.isConnectable && direct.advertisementData == AdvertisingData())
        #expect(try await heard(by: bystander) == nil)
        let link = try await target.connect(advertiser, exchangeMTU: false)
        #expect(await link.connection.peer.address == advertiser.address)
        try await target.disconnect(link)

        var extended = Advertisement(data: try Self.named("Directed"), kind: .nonConnectable, isExtended: true)
        extended.target = LEAddress(targetController.address, type: .public)
        try await peripheral.startAdvertising([extended])
        let found = try #require(try await heard(by: target))
        #expect(!found.isLegacy && !found.isConnectable && found.name == "Directed")
        #expect(try await heard(by: bystander) == nil)

        var refused = Advertisement(data: AdvertisingData(), kind: .nonConnectable)
        refused.target = extended.target
        await #expect(throws: HostError.self) { try await peripheral.startAdvertising(refused) }
    }

    @Test func tooMuchDataIsRefusedBeforeAnythingIsSent() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let m = try await manager(air, at: 0, name: "Huge")
        var extra: [UInt8] = []
        for i in 0..<7 { extra += [250, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: UInt8(i), count: 247) }
        await #expect(throws: WireError.self) {
            try await m.startAdvertising(Advertisement(data: try Self.named("Huge", extra: extra), isExtended: true))
        }
        await #expect(throws: WireError.self) {
            try await m.startAdvertising(Advertisement(data: try Self.named("Huge", extra: Array(extra.prefix(251)))))
        }
        // Connectable extended advertising: one AUX_ADV_IND, 245 bytes at most.
        let fits = try Self.named("Huge", extra: [UInt8](Array(extra.prefix(251)).prefix(245 - 9)).adjustedStructure())
        #expect(fits.encoded.count == 245)
        try await m.startAdvertising(Advertisement(data: fits, kind: .connectable, isExtended: true))
        let tooLong = try Self.named("Huge", extra: [UInt8](Array(extra.prefix(251)).prefix(246 - 9)).adjustedStructure())
        await #expect(throws: WireError.self) {
            try await m.startAdvertising(Advertisement(data: tooLong, kind: .connectable, isExtended: true))
        }
    }
}

extension Array where Element == UInt8 {
    /// These bytes as one AD structure of their length: the first octet set to the length of the rest.
    func adjustedStructure() -> [UInt8] {
        guard let _ = first else { return self }
        var copy = self
        copy[0] = UInt8(count - 1)
        return copy
    }
}
