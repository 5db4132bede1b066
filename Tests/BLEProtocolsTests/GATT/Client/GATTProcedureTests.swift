import BLEProtocols
import BLEProtocolsTestSupport
import BLEWire
import Testing

/// GATT client procedures run synchronously against the ``ATTServer`` machine, and against scripted hostile servers.
@Suite struct GATTProcedureTests {
    static let custom = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0") ?? 0
    static let long = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF2") ?? 0

    /// GAP 0x0001–0x0005, GATT 0x0006–0x0009, Battery 0x000A–0x000D, Heart Rate 0x000E–0x0013 (includes Battery),
    /// custom 0x0014–0x0018.
    static func database() -> GATTDatabase {
        GATTDatabase(deviceName: "Procedures", services: [
            GATTServiceDefinition(uuid: 0x180F, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [87]),
            ]),
            GATTServiceDefinition(uuid: 0x180D, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A37, properties: .notify, permissions: [], value: [0, 60]),
                GATTCharacteristicDefinition(uuid: 0x2A38, properties: .read, value: [1]),
            ], includedServices: [0]),
            GATTServiceDefinition(uuid: custom, characteristics: [
                GATTCharacteristicDefinition(uuid: long, properties: [.read, .write], permissions: [.readable, .writeable],
                                             value: (0..<300).map { UInt8(truncatingIfNeeded: $0) }),
            ]),
        ])
    }

    @Test func fullDiscoveryMatchesTheDatabase() throws {
        let server = try SynchronousATTServer(Self.database())
        var mtu = MTUExchange(clientMTU: 247)
        #expect(try mtu.run(server.answer) == 247)
        var services = PrimaryServiceDiscovery()
        let found = try services.run(server.answer)
        #expect(found.map(\.uuid) == [0x1800, 0x1801, 0x180F, 0x180D, Self.custom])
        #expect(found.last?.endHandle == 0xFFFF || found.last?.endHandle == server.database.attributes.last?.handle)
        var byUUID = PrimaryServiceDiscovery(uuid: 0x180D)
        #expect(try byUUID.run(server.answer).map(\.startHandle) == [found[3].startHandle])
        var characteristics = CharacteristicDiscovery(of: found[3])
        let hr = try characteristics.run(server.answer)
        #expect(hr.map(\.uuid) == [0x2A37, 0x2A38])
        #expect(hr[0].endHandle == hr[1].declarationHandle.previous && hr[1].endHandle == found[3].endHandle)
        var descriptors = DescriptorDiscovery(of: hr[0])
        #expect(try descriptors.run(server.answer).map(\.uuid) == [0x2902])
        var none = DescriptorDiscovery(of: hr[1])
        let before = server.requests.count
        #expect(try none.run(server.answer).isEmpty)
        #expect(server.requests.count == before, "no request when the value is the characteristic's last handle")
        var includes = IncludedServiceDiscovery(of: found[3])
        #expect(try includes.run(server.answer) == [GATTService(uuid: 0x180F, isPrimary: false, startHandle: found[2].startHandle, endHandle: found[2].endHandle)])
    }

    @Test func longValuesReadAndWriteWhole() throws {
        let server = try SynchronousATTServer(Self.database())
        var services = PrimaryServiceDiscovery(uuid: Self.custom)
        let service = try #require(try services.run(server.answer).first)
        var discovery = CharacteristicDiscovery(of: service, uuid: Self.long)
        let characteristic = try #require(try discovery.run(server.answer).first)
        var read = ValueRead(handle: characteristic.valueHandle, mtu: 23)
        #expect(try read.run(server.answer) == (0..<300).map { UInt8(truncatingIfNeeded: $0) })
        let value = (0..<512).map { UInt8(truncatingIfNeeded: $0 * 7) }
        var write = ValueWrite(handle: characteristic.valueHandle, value: value, mtu: 23)
        try write.run(server.answer)
        var again = ValueRead(handle: characteristic.valueHandle, mtu: 23)
        #expect(try again.run(server.answer) == value)
        // 513 bytes are refused before anything is sent.
        var tooLong = ValueWrite(handle: characteristic.valueHandle, value: Array(repeating: 0, count: 513), mtu: 247)
        let requests = server.requests.count
        #expect(throws: GATTError(.invalidValueLength, "")) { try tooLong.run(server.answer) }
        #expect(server.requests.count == requests)
    }

    /// Include declarations come in handle order, but the services they reference may lie anywhere in the database:
    /// their ranges need not rise (the GATT client fuzz target's input, which an ordering check wrongly refused).
    @Test func includedServicesMayReferenceServicesInAnyOrder() throws {
        let script = ScriptedATTServer([.readByTypeResponse(.init(entries: [
            .init(handle: 0x0907, value: [0x09, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),   // 0xFF09…0xFFFF, service 0xFFFF
            .init(handle: 0xFFFF, value: [0x0D, 0x00, 0x01, 0x0F, 0x30, 0x03]),   // 0x000D…0x0F01, service 0x0330
        ]))])
        var discovery = IncludedServiceDiscovery(of: GATTService(uuid: 0x1800, isPrimary: true, startHandle: 1, endHandle: 0xFFFF))
        let included = try discovery.run(script.answer)
        #expect(included.map(\.startHandle) == [0xFF09, 0x000D] && included.map(\.endHandle) == [0xFFFF, 0x0F01])
        #expect(script.requests.count == 1, "the declaration at 0xFFFF ends the walk")
    }

    /// A characteristic whose value handle is 0xFFFF has no room for descriptors: nothing to ask, no overflow.
    @Test func aValueHandleAt0xFFFFEndsTheWalk() throws {
        let script = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0xFFFE, value: 0xFFFF)]))])
        var discovery = CharacteristicDiscovery(in: 0xFFF0...0xFFFF)
        let found = try discovery.run(script.answer)
        #expect(found.map(\.valueHandle) == [0xFFFF] && found[0].endHandle == 0xFFFF)
        #expect(script.requests.count == 1, "the walk ends at the range's end without asking again")
        var descriptors = DescriptorDiscovery(of: found[0])
        #expect(try descriptors.run(script.answer).isEmpty)
        #expect(script.requests.count == 1)
    }

    @Test func declarationsOutOfOrderOrRepeatedAreRejected() {
        let backwards = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0x0020, value: 0x0021), .declaration(0x0010, value: 0x0011)]))])
        var a = CharacteristicDiscovery(in: 0x0001...0x0030)
        #expect(throws: GATTError(.malformedResponse, "")) { try a.run(backwards.answer) }
        let repeated = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0x0010, value: 0x0011), .declaration(0x0010, value: 0x0011)]))])
        var b = CharacteristicDiscovery(in: 0x0001...0x0030)
        #expect(throws: GATTError(.malformedResponse, "")) { try b.run(repeated.answer) }
        // A second page that goes back before the first.
        let secondPage = ScriptedATTServer([
            .readByTypeResponse(.init(entries: [.declaration(0x0010, value: 0x0011)])),
            .readByTypeResponse(.init(entries: [.declaration(0x0005, value: 0x0006)])),
        ])
        var c = CharacteristicDiscovery(in: 0x0001...0x0030)
        #expect(throws: GATTError(.malformedResponse, "")) { try c.run(secondPage.answer) }
        // A value handle before its declaration, or past the range.
        let badValue = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0x0010, value: 0x0010)]))])
        var d = CharacteristicDiscovery(in: 0x0001...0x0030)
        #expect(throws: GATTError(.malformedResponse, "")) { try d.run(badValue.answer) }
        // Declarations that overlap (a value handle at the next declaration).
        let overlapping = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0x0010, value: 0x0012), .declaration(0x0012, value: 0x0013)]))])
        var e = CharacteristicDiscovery(in: 0x0001...0x0030)
        #expect(throws: GATTError(.malformedResponse, "")) { try e.run(overlapping.answer) }
        // A handle outside the requested range.
        let outside = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0x0040, value: 0x0041)]))])
        var f = CharacteristicDiscovery(in: 0x0001...0x0030)
        #expect(throws: GATTError(.malformedResponse, "")) { try f.run(outside.answer) }
    }

    @Test func servicesThatOverlapOrInvertAreRejected() throws {
        func group(_ start: AttributeHandle, _ end: AttributeHandle) -> ATTReadByGroupTypeResponse.Entry { .init(handle: start, endGroupHandle: end, value: [0x0F, 0x18]) }
        let overlap = ScriptedATTServer([.readByGroupTypeResponse(.init(entries: [group(1, 10), group(5, 12)]))])
        var a = PrimaryServiceDiscovery()
        #expect(throws: GATTError(.malformedResponse, "")) { try a.run(overlap.answer) }
        let inverted = ScriptedATTServer([.readByGroupTypeResponse(.init(entries: [group(10, 5)]))])
        var b = PrimaryServiceDiscovery()
        #expect(throws: GATTError(.malformedResponse, "")) { try b.run(inverted.answer) }
        // A group ending at 0xFFFF ends the walk.
        let last = ScriptedATTServer([.readByGroupTypeResponse(.init(entries: [group(1, 0xFFFF)]))])
        var c = PrimaryServiceDiscovery()
        #expect(try c.run(last.answer).count == 1)
        #expect(last.requests.count == 1)
    }

    /// Discovery responses whose entry length is 0 or does not divide the data do not decode (Invalid PDU for the
    /// procedure: malformed); a server paging one handle at a time cannot keep a walk going past 0xFFFF, and one that
    /// pages back to a handle already seen is refused.
    @Test func lengthsThatDoNotDivideAndEndlessPagesEndTheProcedure() throws {
        for bytes: [UInt8] in [
            [0x09, 0x00],                                                  // Read By Type Response, length 0
            [0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A, 0x01],  // 10 octets in entries of 7
            [0x11, 0x00],                                                  // Read By Group Type Response, length 0
            [0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x0F, 0x18, 0x06],        // 7 octets in entries of 6
            [0x05, 0x01, 0x01, 0x00, 0x00],                                // Find Information, 16-bit, 3 octets
            [0x05, 0x03, 0x01, 0x00, 0x00, 0x28],                          // Find Information, unknown format
            [0x07, 0x01, 0x00, 0x05],                                      // Find By Type Value, 3 octets
        ] {
            #expect(throws: WireError.self, "\(bytes)") { try ATTPDU(bytes: bytes) }
        }
        // One service per page, each one handle long: the walk ends at 0xFFFF, after exactly 0xFFFF pages.
        var pages = 0
        var walk = PrimaryServiceDiscovery()
        let services = try walk.run { (request: ATTPDU) throws(GATTError) -> ATTPDU in
            guard case .readByGroupTypeRequest(let r) = request else { throw GATTError(.malformedResponse, "unexpected \(request)") }
            pages += 1
            return .readByGroupTypeResponse(.init(entries: [.init(handle: r.range.start, endGroupHandle: r.range.start, value: [0x0F, 0x18])]))
        }
        #expect(pages == 0xFFFF && services.count == 0xFFFF)
        // A page that repeats the previous one is refused at once.
        var repeats = 0
        var again = PrimaryServiceDiscovery()
        #expect(throws: GATTError(.malformedResponse, "")) {
            _ = try again.run { (_: ATTPDU) throws(GATTError) -> ATTPDU in
                repeats += 1
                return .readByGroupTypeResponse(.init(entries: [.init(handle: 1, endGroupHandle: 5, value: [0x0F, 0x18])]))
            }
        }
        #expect(repeats == 2)
    }

    @Test func readsLongerThan512BytesAreRefused() {
        // At MTU 517 a single Read Response may carry 516 bytes: more than an attribute value may hold.
        let script = ScriptedATTServer([.readResponse(.init(value: Array(repeating: 1, count: 516)))])
        var read = ValueRead(handle: 3, mtu: 517)
        #expect(throws: GATTError(.malformedResponse, "")) { try read.run(script.answer) }
        // A response longer than ATT_MTU − 1.
        let oversized = ScriptedATTServer([.readResponse(.init(value: Array(repeating: 1, count: 30)))])
        var small = ValueRead(handle: 3, mtu: 23)
        #expect(throws: GATTError(.malformedResponse, "")) { try small.run(oversized.answer) }
    }

    @Test func aWrongEchoCancelsThePreparedWrites() {
        let script = ScriptedATTServer([
            .prepareWriteResponse(.init(handle: 3, offset: 0, value: [0xFF])),
            .executeWriteResponse(.init()),
        ])
        var write = ValueWrite(handle: 3, value: Array(repeating: 1, count: 100), mtu: 23)
        #expect(throws: GATTError(.malformedResponse, "")) { try write.run(script.answer) }
        #expect(script.requests.last == .executeWriteRequest(.init(commit: false)))
    }

    @Test func errorsOtherThanNotFoundFailTheProcedure() {
        let script = ScriptedATTServer([.errorResponse(.init(requestOpcode: .readByTypeRequest, handle: 1, error: .insufficientAuthentication))])
        var discovery = CharacteristicDiscovery(in: 1...0xFFFF)
        #expect(throws: GATTError(.att(.insufficientAuthentication, handle: 1), "")) { try discovery.run(script.answer) }
        let empty = ScriptedATTServer([.findInformationResponse(.init(entries: []))])
        var descriptors = DescriptorDiscovery(in: 1...10)
        #expect(throws: GATTError(.malformedResponse, "")) { try descriptors.run(empty.answer) }
    }
}
