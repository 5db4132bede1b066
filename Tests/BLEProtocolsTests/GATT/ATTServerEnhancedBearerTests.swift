import BLEProtocols
import BLEWire
import Testing

/// The server's view of a client on an Enhanced ATT bearer, Server Supported Features, Read Multiple Variable Length
/// and the Multiple Handle Value Notifications bit. Core 5.4, Vol 3, Part F, 3.2.11 and 3.4.4.11; Part G, 7.2 and 7.4.
@Suite struct ATTServerEnhancedBearerTests {
    static let long = BluetoothUUID("12345678-1234-5678-1234-56789ABCDE01") ?? 0

    func database(enhancedATT: Bool = true) -> GATTDatabase {
        GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.long, properties: .read, value: Array(0..<200)),
                GATTCharacteristicDefinition(uuid: 0xFFF2, properties: .read, value: [0xAB, 0xCD]),
            ]),
        ], enhancedATT: enhancedATT)
    }

    func send(_ pdu: ATTPDU, _ c: inout ATTServerConnection, _ db: inout GATTDatabase) -> ATTPDU? {
        ATTServer.handle(pdu.encoded, connection: &c, database: &db).response.flatMap { try? ATTPDU(bytes: $0) }
    }

    /// Server Supported Features: read only, EATT bit set, only when asked for; the database without it keeps its
    /// handles.
    @Test func serverSupportedFeaturesSaysEATT() throws {
        var db = database()
        var c = ATTServerConnection()
        let handle = try #require(db.valueHandle(of: 0x2B3A))
        #expect(send(.readRequest(.init(handle: handle)), &c, &db) == .readResponse(.init(value: [0x01])))
        #expect(send(.writeRequest(.init(handle: handle, value: [0x00])), &c, &db)
                == .errorResponse(.init(requestOpcode: .writeRequest, handle: handle, error: .writeNotPermitted)))
        let plain = database(enhancedATT: false)
        #expect(plain.valueHandle(of: 0x2B3A) == nil)
        // Server Supported Features takes two handles (declaration, value) at the end of the GATT service.
        let withFeatures = try #require(db.valueHandle(of: Self.long))
        #expect(plain.valueHandle(of: Self.long)?.rawValue == withFeatures.rawValue - 2)
    }

    /// On an EATT bearer the client's ATT_MTU is the bearer's (a read answers MTU − 1 octets of it), Exchange MTU is
    /// refused, and what the request changed (Client Supported Features) is the link's for every bearer, while the
    /// link keeps its own MTU.
    @Test func anEnhancedBearerHasItsOwnMTUAndNoExchange() throws {
        var db = database()
        var link = ATTServerConnection()
        link.serverMTU = 247
        link.negotiated(mtu: 100)
        let value = try #require(db.valueHandle(of: Self.long))
        var view = link.onEnhancedBearer(mtu: 64)
        #expect(view.isEnhancedBearer && view.mtu == 64)
        #expect(send(.readRequest(.init(handle: value)), &view, &db) == .readResponse(.init(value: Array(0..<63))))
        #expect(send(.exchangeMTURequest(.init(mtu: 517)), &view, &db)
                == .errorResponse(.init(requestOpcode: .exchangeMTURequest, handle: 0, error: .requestNotSupported)))
        let features = try #require(db.valueHandle(of: 0x2B29))
        #expect(send(.writeRequest(.init(handle: features, value: [0x06])), &view, &db) == .writeResponse(.init()))
        link.adopt(fromBearer: view)
        #expect(link.mtu == 100 && !link.isEnhancedBearer)
        #expect(link.clientSupportedFeatures == 0x06 && link.multipleNotifications && !link.robustCaching)
        #expect(send(.readRequest(.init(handle: value)), &link, &db) == .readResponse(.init(value: Array(0..<99))))
    }

    /// Prepared writes are per bearer: a long write prepared on an EATT bearer and another on the unenhanced bearer
    /// do not mix, and each Execute Write commits its own bearer's parts only.
    @Test func preparedWritesArePerBearer() throws {
        var db = GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: [
                GATTCharacteristicDefinition(uuid: 0xFFF3, properties: [.read, .write], permissions: [.readable, .writeable], value: []),
                GATTCharacteristicDefinition(uuid: 0xFFF4, properties: [.read, .write], permissions: [.readable, .writeable], value: []),
            ]),
        ], enhancedATT: true)
        let one = try #require(db.valueHandle(of: 0xFFF3)), two = try #require(db.valueHandle(of: 0xFFF4))
        var link = ATTServerConnection()
        var bearerQueue = ATTServerConnection.PreparedWrites()
        func onBearer(_ pdu: ATTPDU) -> ATTPDU? {
            var view = link.onEnhancedBearer(mtu: 64, preparedWrites: bearerQueue)
            let response = send(pdu, &view, &db)
            bearerQueue = link.adopt(fromBearer: view)
            return response
        }
        #expect(onBearer(.prepareWriteRequest(.init(handle: one, offset: 0, value: [1, 1]))) != nil)
        #expect(send(.prepareWriteRequest(.init(handle: two, offset: 0, value: [2, 2])), &link, &db) != nil)
        #expect(onBearer(.prepareWriteRequest(.init(handle: one, offset: 2, value: [1]))) != nil)
        #expect(bearerQueue.count == 2)
        // The unenhanced bearer's execute commits its own part only.
        #expect(send(.executeWriteRequest(.init(commit: true)), &link, &db) == .executeWriteResponse(.init()))
        #expect(db.attribute(two)?.value == [2, 2] && db.attribute(one)?.value == [])
        #expect(onBearer(.executeWriteRequest(.init(commit: true))) == .executeWriteResponse(.init()))
        #expect(db.attribute(one)?.value == [1, 1, 1] && bearerQueue.count == 0)
    }

    /// Read Multiple Variable Length answers (length, value) pairs, each value cut to what fits the bearer's MTU.
    @Test func readMultipleVariableLengthOnABearer() throws {
        var db = database()
        let long = try #require(db.valueHandle(of: Self.long))
        let short = try #require(db.valueHandle(of: 0xFFF2))
        var view = ATTServerConnection().onEnhancedBearer(mtu: 64)
        let response = send(.readMultipleVariableRequest(.init(handles: [short, long])), &view, &db)
        // 1 opcode + (2 + 2) + (2 + 57) = 64.
        #expect(response == .readMultipleVariableResponse(.init(entries: [.init(length: 2, value: [0xAB, 0xCD]),
                                                                          .init(length: 200, value: Array(0..<57))])))
        #expect(response?.encoded.count == 64)
    }
}
