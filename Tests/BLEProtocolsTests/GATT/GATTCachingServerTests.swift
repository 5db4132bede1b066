import BLEProtocols
import BLEWire
import Testing

/// GATT caching on the server side, driven synchronously: the Database Hash (Core 5.4, Vol 3, Part G, 7.3), Client
/// Supported Features (7.2) and robust caching's change-aware states (2.5.2.1).
@Suite struct GATTCachingServerTests {
    /// The example database of Core 5.4, Vol 3, Part G, Appendix B, attribute by attribute.
    static func appendixB() -> [GATTAttribute] {
        func a(_ handle: UInt16, _ type: UInt16, _ value: [UInt8], _ role: GATTAttribute.Role) -> GATTAttribute {
            GATTAttribute(handle: AttributeHandle(rawValue: handle), type: BluetoothUUID(type), value: value, permissions: .readable, role: role)
        }
        let declaration = GATTAttribute.Role.characteristicDeclaration
        let value = GATTAttribute.Role.characteristicValue(properties: .read)
        return [
            a(0x0001, 0x2800, [0x00, 0x18], .serviceDeclaration(endGroupHandle: 0x0005)),
            a(0x0002, 0x2803, [0x0A, 0x03, 0x00, 0x00, 0x2A], declaration), a(0x0003, 0x2A00, Array("Example".utf8), value),
            a(0x0004, 0x2803, [0x02, 0x05, 0x00, 0x01, 0x2A], declaration), a(0x0005, 0x2A01, [0x00, 0x00], value),
            a(0x0006, 0x2800, [0x01, 0x18], .serviceDeclaration(endGroupHandle: 0x000D)),
            a(0x0007, 0x2803, [0x20, 0x08, 0x00, 0x05, 0x2A], declaration), a(0x0008, 0x2A05, [], value),
            a(0x0009, 0x2902, [0x00, 0x00], .descriptor),
            a(0x000A, 0x2803, [0x0A, 0x0B, 0x00, 0x29, 0x2B], declaration), a(0x000B, 0x2B29, [0x00], value),
            a(0x000C, 0x2803, [0x02, 0x0D, 0x00, 0x2A, 0x2B], declaration), a(0x000D, 0x2B2A, Array(repeating: 0, count: 16), value),
            a(0x000E, 0x2800, [0x08, 0x18], .serviceDeclaration(endGroupHandle: 0x0013)),
            a(0x000F, 0x2802, [0x14, 0x00, 0x16, 0x00, 0x0F, 0x18], .include),
            a(0x0010, 0x2803, [0xA2, 0x11, 0x00, 0x18, 0x2A], declaration), a(0x0011, 0x2A18, [], value),
            a(0x0012, 0x2902, [0x00, 0x00], .descriptor), a(0x0013, 0x2900, [0x00, 0x00], .descriptor),
            a(0x0014, 0x2801, [0x0F, 0x18], .serviceDeclaration(endGroupHandle: 0x0016)),
            a(0x0015, 0x2803, [0x02, 0x16, 0x00, 0x19, 0x2A], declaration), a(0x0016, 0x2A19, [0x64], value),
        ]
    }

    /// The specification's example: the message (blocks M0–M6) and its hash, F1CA2D48 ECF58BAC 8A8830BB B9FBA990,
    /// served least significant octet first.
    @Test func theAppendixBExampleHashesAsTheSpecificationSays() {
        let message = GATTDatabase.hashMessage(of: Self.appendixB())
        #expect(message.hexString() == ("010000280018020003280A0300002A04000328020500012A0600002801180700"
            + "0328200800052A090002290A0003280A0B00292B0C000328020D002A2B0E00002808180F000228140016000F1810000328"
            + "A21100182A12000229130000290000140001280F1815000328021600192A").lowercased())
        #expect(GATTDatabase.hash(of: Self.appendixB()) == Array(([UInt8](hex: "F1CA2D48ECF58BAC8A8830BBB9FBA990") ?? []).reversed()))
    }

    static func database() -> GATTDatabase {
        GATTDatabase(deviceName: "Cache", services: [
            GATTServiceDefinition(uuid: 0x180F, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A19, properties: [.read, .write, .writeWithoutResponse, .notify],
                                             permissions: [.readable, .writeable], value: [87]),
            ]),
        ])
    }

    /// The hash covers the structure: a value change leaves it, a service added or removed changes it, and two
    /// databases laid out alike hash alike. The Database Hash characteristic serves it.
    @Test func theHashFollowsTheStructureAndIsServed() throws {
        var db = Self.database()
        let first = db.hash
        #expect(first.count == 16 && first != Array(repeating: 0, count: 16))
        #expect(Self.database().hash == first)
        let battery = try #require(db.valueHandle(of: 0x2A19))
        db.setValue([12], for: battery)
        #expect(db.hash == first)
        let added = db.add(GATTServiceDefinition(uuid: 0x180A, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, value: Array("Maker".utf8)),
        ]))
        let range = try #require(added)
        #expect(db.hash != first)
        _ = db.removeService(at: range.lowerBound)
        #expect(db.hash == first)
        #expect(GATTDatabase(deviceName: "Cache", services: [], caching: true).hash != first)
        var connection = ATTServerConnection()
        let out = ATTServer.handle(ATTPDU.readByTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2B2A)).encoded,
                                   connection: &connection, database: &db)
        let hashHandle = try #require(db.valueHandle(of: 0x2B2A))
        #expect(out.response == ATTPDU.readByTypeResponse(.init(entries: [.init(handle: hashHandle, value: first)])).encoded)
        // Without caching the GATT service has neither characteristic.
        let legacy = GATTDatabase(deviceName: "Cache", services: [], caching: false)
        #expect(legacy.valueHandle(of: 0x2B2A) == nil && legacy.valueHandle(of: 0x2B29) == nil)
    }

    struct Client {
        var db = GATTCachingServerTests.database()
        var connection = ATTServerConnection()
        mutating func send(_ pdu: ATTPDU) -> ATTPDU? {
            let out = ATTServer.handle(pdu.encoded, connection: &connection, database: &db)
            return out.response.flatMap { try? ATTPDU(bytes: $0) }
        }
        var features: AttributeHandle { db.valueHandle(of: 0x2B29) ?? 0 }
        var battery: AttributeHandle { db.valueHandle(of: 0x2A19) ?? 0 }
        func error(_ opcode: ATTOpcode, _ handle: AttributeHandle, _ code: ATTErrorCode) -> ATTPDU {
            .errorResponse(.init(requestOpcode: opcode, handle: handle, error: code))
        }
    }

    /// Client Supported Features: one octet per client, known bits only, a bit once set never cleared.
    @Test func clientSupportedFeaturesArePerClientAndOnlyGrow() {
        var a = Client()
        var b = Client()
        #expect(a.send(.readRequest(.init(handle: a.features))) == .readResponse(.init(value: [0x00])))
        #expect(a.send(.writeRequest(.init(handle: a.features, value: [0xF9]))) == .writeResponse(.init()))
        #expect(a.send(.readRequest(.init(handle: a.features))) == .readResponse(.init(value: [0x01])))
        #expect(a.connection.robustCaching)
        #expect(a.send(.writeRequest(.init(handle: a.features, value: [0x00]))) == a.error(.writeRequest, a.features, .valueNotAllowed))
        #expect(a.send(.writeRequest(.init(handle: a.features, value: [0x05]))) == .writeResponse(.init()))
        #expect(a.send(.writeRequest(.init(handle: a.features, value: [0x01, 0x00]))) == a.error(.writeRequest, a.features, .invalidAttributeValueLength))
        #expect(a.send(.writeRequest(.init(handle: a.features, value: []))) == a.error(.writeRequest, a.features, .invalidAttributeValueLength))
        #expect(a.send(.readRequest(.init(handle: a.features))) == .readResponse(.init(value: [0x05])))
        #expect(b.send(.readRequest(.init(handle: b.features))) == .readResponse(.init(value: [0x00])))
        #expect(!b.connection.robustCaching)
    }

    /// A change-unaware client with robust caching is answered Database Out Of Sync once, at the first request at a
    /// handle; its next request makes it change-aware and is served.
    @Test func aChangeUnawareClientIsOutOfSyncOnceThenServed() {
        var c = Client()
        #expect(c.send(.writeRequest(.init(handle: c.features, value: [0x01]))) == .writeResponse(.init()))
        c.connection.databaseChanged()
        #expect(c.send(.readRequest(.init(handle: c.battery))) == c.error(.readRequest, c.battery, .databaseOutOfSync))
        #expect(!c.connection.isChangeAware)
        #expect(c.send(.readRequest(.init(handle: c.battery))) == .readResponse(.init(value: [87])))
        #expect(c.connection.isChangeAware)
        #expect(c.send(.readRequest(.init(handle: c.battery))) == .readResponse(.init(value: [87])))
    }

    /// Every request at attribute handles is refused while unaware; discovery is served and changes nothing.
    @Test(arguments: [0, 1, 2, 3, 4, 5, 6, 7]) func requestsAtHandlesAreOutOfSync(_ kind: Int) {
        var c = Client()
        _ = c.send(.writeRequest(.init(handle: c.features, value: [0x01])))
        c.connection.databaseChanged()
        // Discovery first: served, the client stays unaware.
        guard case .readByGroupTypeResponse = c.send(.readByGroupTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2800))) else {
            Issue.record("service discovery was not served")
            return
        }
        guard case .readByTypeResponse = c.send(.readByTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2803))) else {
            Issue.record("characteristic discovery was not served")
            return
        }
        guard case .findInformationResponse = c.send(.findInformationRequest(.init(range: .init(start: 1, end: 0xFFFF)))) else {
            Issue.record("descriptor discovery was not served")
            return
        }
        #expect(!c.connection.isChangeAware)
        let h = c.battery
        let (request, opcode, handle): (ATTPDU, ATTOpcode, AttributeHandle) = switch kind {
        case 0: (.readRequest(.init(handle: h)), .readRequest, h)
        case 1: (.readBlobRequest(.init(handle: h, offset: 0)), .readBlobRequest, h)
        case 2: (.readMultipleRequest(.init(handles: [h, c.features])), .readMultipleRequest, h)
        case 3: (.readMultipleVariableRequest(.init(handles: [h, c.features])), .readMultipleVariableRequest, h)
        case 4: (.writeRequest(.init(handle: h, value: [1])), .writeRequest, h)
        case 5: (.prepareWriteRequest(.init(handle: h, offset: 0, value: [1])), .prepareWriteRequest, h)
        case 6: (.executeWriteRequest(.init(commit: true)), .executeWriteRequest, 0)
        default: (.readByTypeRequest(.init(range: .init(start: h, end: 0xFFFF), type: 0x2A19)), .readByTypeRequest, h)
        }
        #expect(c.send(request) == c.error(opcode, handle, .databaseOutOfSync))
        #expect(c.db.attribute(h)?.value == [87])
    }

    /// Reading the Database Hash over the whole range is served to an unaware client, and its next request makes it
    /// change-aware; a Write Command from an unaware client is ignored.
    @Test func readingTheHashThenAnotherRequestMakesTheClientAware() {
        var c = Client()
        _ = c.send(.writeRequest(.init(handle: c.features, value: [0x01])))
        c.connection.databaseChanged()
        #expect(c.send(.writeCommand(.init(handle: c.battery, value: [5]))) == nil)
        #expect(c.db.attribute(c.battery)?.value == [87])
        guard case .readByTypeResponse(let r) = c.send(.readByTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2B2A))) else {
            Issue.record("the hash was not served")
            return
        }
        #expect(r.entries.first?.value == c.db.hash)
        #expect(!c.connection.isChangeAware)
        #expect(c.send(.writeRequest(.init(handle: c.battery, value: [6]))) == .writeResponse(.init()))
        #expect(c.connection.isChangeAware)
        #expect(c.send(.writeCommand(.init(handle: c.battery, value: [7]))) == nil)
        #expect(c.db.attribute(c.battery)?.value == [7])
    }

    /// A client that did not enable robust caching is never answered Database Out Of Sync.
    @Test func withoutRobustCachingNothingIsRefused() {
        var c = Client()
        c.connection.databaseChanged()
        #expect(c.send(.readRequest(.init(handle: c.battery))) == .readResponse(.init(value: [87])))
        #expect(c.send(.writeRequest(.init(handle: c.battery, value: [3]))) == .writeResponse(.init()))
    }

    /// Enabling robust caching makes the client change-aware (it has just chosen to track the database), and a
    /// bonded client's features and awareness are restored as they were.
    @Test func enablingAndRestoring() {
        var c = Client()
        c.connection.databaseChanged()
        #expect(c.send(.writeRequest(.init(handle: c.features, value: [0x01]))) == .writeResponse(.init()))
        #expect(c.connection.isChangeAware)
        var again = Client()
        again.connection.restore(clientSupportedFeatures: 0x01, isChangeAware: false)
        #expect(again.send(.readRequest(.init(handle: again.battery))) == again.error(.readRequest, again.battery, .databaseOutOfSync))
        again.connection.becameChangeAware()
        #expect(again.send(.readRequest(.init(handle: again.battery))) == .readResponse(.init(value: [87])))
    }
}
