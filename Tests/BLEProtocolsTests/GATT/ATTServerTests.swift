import BLEProtocols
import BLEWire
import Testing

@Suite struct ATTServerTests {
    static let custom = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0") ?? 0
    static let writable = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF1") ?? 0

    /// A server built without GATT caching (no Client Supported Features, no Database Hash): GAP 0x0001–0x0005,
    /// GATT 0x0006–0x0009, Battery 0x000A–0x000D (decl, value 0x000C, CCCD 0x000D),
    /// custom 0x000E–0x0013 (writable: declaration 0x000F, value 0x0010, user description 0x0011; secret:
    /// declaration 0x0012, value 0x0013).
    func database() -> GATTDatabase {
        GATTDatabase(deviceName: "Test", services: [
            GATTServiceDefinition(uuid: 0x180F, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [87]),
            ]),
            GATTServiceDefinition(uuid: Self.custom, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.writable, properties: [.read, .write, .writeWithoutResponse],
                                             permissions: [.readable, .writeable], value: Array("initial".utf8), userDescription: "Writable"),
                GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, permissions: [.readable, .readEncryptionRequired],
                                             value: Array("secret".utf8)),
            ]),
        ], caching: false)
    }

    struct Server {
        var db: GATTDatabase
        var connection = ATTServerConnection()
        mutating func send(_ hex: String) -> (String?, [ATTServerEvent]) {
            let out = ATTServer.handle([UInt8](hex: hex) ?? [], connection: &connection, database: &db)
            return (out.response?.hexString(), out.events)
        }
        mutating func send(_ pdu: ATTPDU) -> (ATTPDU?, [ATTServerEvent]) {
            let out = ATTServer.handle(pdu.encoded, connection: &connection, database: &db)
            return (out.response.flatMap { try? ATTPDU(bytes: $0) }, out.events)
        }
    }

    func error(_ opcode: ATTOpcode, _ handle: AttributeHandle, _ code: ATTErrorCode) -> ATTPDU {
        .errorResponse(.init(requestOpcode: opcode, handle: handle, error: code))
    }

    @Test func layoutAndServiceDiscovery() throws {
        var s = Server(db: database())
        let groups = s.send(.readByGroupTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2800))).0
        // Only the 16-bit services fit one response (entries share a length); then the 128-bit one.
        #expect(groups == .readByGroupTypeResponse(.init(entries: [
            .init(handle: 0x01, endGroupHandle: 0x05, value: [0x00, 0x18]),
            .init(handle: 0x06, endGroupHandle: 0x09, value: [0x01, 0x18]),
            .init(handle: 0x0A, endGroupHandle: 0x0D, value: [0x0F, 0x18]),
        ])))
        let next = s.send(.readByGroupTypeRequest(.init(range: .init(start: 0x0E, end: 0xFFFF), type: 0x2800))).0
        #expect(next == .readByGroupTypeResponse(.init(entries: [.init(handle: 0x0E, endGroupHandle: 0x13, value: Self.custom.attWireBytes)])))
        #expect(s.send(.readByGroupTypeRequest(.init(range: .init(start: 0x14, end: 0xFFFF), type: 0x2800))).0
                == error(.readByGroupTypeRequest, 0x14, .attributeNotFound))
        // By UUID: Find By Type Value.
        #expect(s.send(.findByTypeValueRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2800, value: [0x0F, 0x18]))).0
                == .findByTypeValueResponse(.init(handles: [.init(start: 0x0A, end: 0x0D)])))
        #expect(s.db.valueHandle(of: 0x2A19) == 0x0C)
        #expect(s.db.valueHandle(of: Self.writable, in: Self.custom) == 0x10)
        #expect(s.db.lastHandle == 0x13)
    }

    @Test func characteristicAndDescriptorDiscovery() {
        var s = Server(db: database())
        // Characteristic declarations in the battery service: properties read|notify, value handle 0x000C, 0x2A19.
        #expect(s.send(.readByTypeRequest(.init(range: .init(start: 0x0A, end: 0x0D), type: 0x2803))).0
                == .readByTypeResponse(.init(entries: [.init(handle: 0x0B, value: [0x12, 0x0C, 0x00, 0x19, 0x2A])])))
        // Descriptors after the value: the CCCD.
        #expect(s.send(.findInformationRequest(.init(range: .init(start: 0x0D, end: 0x0D)))).0
                == .findInformationResponse(.init(entries: [.init(handle: 0x0D, type: 0x2902)])))
        // The user description of the writable characteristic.
        #expect(s.send(.readRequest(.init(handle: 0x11))).0 == .readResponse(.init(value: Array("Writable".utf8))))
    }

    @Test func mtuExchange() {
        var s = Server(db: database())
        let (response, events) = s.send(.exchangeMTURequest(.init(mtu: 10)))
        #expect(response == .exchangeMTUResponse(.init(mtu: 517)))
        #expect(events == [.mtuChanged(23)], "a client MTU below 23 counts as 23")
        _ = s.send(.exchangeMTURequest(.init(mtu: 247)))
        #expect(s.connection.mtu == 247)
    }

    @Test func badRequestsGetTheSpecifiedErrors() {
        var s = Server(db: database())
        // Unknown request → Request Not Supported; unknown command → silence.
        #expect(s.send("3f0102").0 == "013f000006")
        #expect(s.send("7f0102").0 == nil)
        // Too short → Invalid PDU.
        #expect(s.send("0a01").0 == "010a000004")
        // Handle 0 and start > end → Invalid Handle.
        #expect(s.send(.readRequest(.init(handle: 0))).0 == error(.readRequest, 0, .invalidHandle))
        #expect(s.send(.findInformationRequest(.init(range: .init(start: 9, end: 3)))).0 == error(.findInformationRequest, 9, .invalidHandle))
        #expect(s.send(.readRequest(.init(handle: 0x99))).0 == error(.readRequest, 0x99, .invalidHandle))
        // Read By Group Type with a non-grouping type → Unsupported Group Type.
        #expect(s.send(.readByGroupTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2803))).0
                == error(.readByGroupTypeRequest, 1, .unsupportedGroupType))
        // Offset past the end → Invalid Offset; at the end → empty.
        #expect(s.send(.readBlobRequest(.init(handle: 0x10, offset: 8))).0 == error(.readBlobRequest, 0x10, .invalidOffset))
        #expect(s.send(.readBlobRequest(.init(handle: 0x10, offset: 7))).0 == .readBlobResponse(.init(value: [])))
        // Too long → Invalid Attribute Value Length.
        #expect(s.send(.writeRequest(.init(handle: 0x10, value: Array(repeating: 1, count: 513)))).0
                == error(.writeRequest, 0x10, .invalidAttributeValueLength))
        // Writing a read-only characteristic, a declaration.
        #expect(s.send(.writeRequest(.init(handle: 0x0C, value: [1]))).0 == error(.writeRequest, 0x0C, .writeNotPermitted))
        #expect(s.send(.writeRequest(.init(handle: 0x0B, value: [1]))).0 == error(.writeRequest, 0x0B, .writeNotPermitted))
        // Encryption required (Core 5.4, Vol 3, Part C, 10.3.1): without a key for the client, Insufficient
        // Authentication (it must pair first); with one, Insufficient Encryption (it can encrypt).
        #expect(s.send(.readRequest(.init(handle: 0x13))).0 == error(.readRequest, 0x13, .insufficientAuthentication))
        s.connection.hasLongTermKey = true
        #expect(s.send(.readRequest(.init(handle: 0x13))).0 == error(.readRequest, 0x13, .insufficientEncryption))
        // Encrypted with a key shorter than the server's minimum: Encryption Key Size Too Short.
        s.connection.isEncrypted = true
        s.connection.keySize = 7
        #expect(s.send(.readRequest(.init(handle: 0x13))).0 == error(.readRequest, 0x13, .encryptionKeySizeTooShort))
        s.connection.keySize = 16
        #expect(s.send(.readRequest(.init(handle: 0x13))).0 == .readResponse(.init(value: Array("secret".utf8))))
        // Responses sent to a server are ignored.
        #expect(s.send(.readResponse(.init(value: [1]))).0 == nil)
    }

    /// A CCCD published with `clientConfigurationPermissions` requiring encryption (as ANCS's are): subscribing is
    /// refused until the link is encrypted, with the same errors as a protected value; then accepted.
    @Test func aClientConfigurationCanRequireEncryption() {
        var s = Server(db: GATTDatabase(deviceName: "Test", services: [
            GATTServiceDefinition(uuid: Self.custom, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.writable, properties: .notify, permissions: [],
                                             clientConfigurationPermissions: [.readable, .writeable, .writeEncryptionRequired]),
                GATTCharacteristicDefinition(uuid: 0x2A19, properties: .notify, permissions: []),
            ]),
        ], caching: false))
        // GAP 0x01-0x05, GATT 0x06-0x09, the service 0x0A: protected (decl 0x0B, value 0x0C, CCCD 0x0D), open (0x0E-0x10).
        #expect(s.db.attribute(0x0D)?.permissions == [.readable, .writeable, .writeEncryptionRequired])
        #expect(s.db.attribute(0x10)?.permissions == [.readable, .writeable])
        #expect(s.send(.writeRequest(.init(handle: 0x0D, value: [1, 0]))).0 == error(.writeRequest, 0x0D, .insufficientAuthentication))
        #expect(s.connection.clientConfigurations.isEmpty)
        // Reading it needs nothing; the unprotected one is written at once.
        #expect(s.send(.readRequest(.init(handle: 0x0D))).0 == .readResponse(.init(value: [0, 0])))
        #expect(s.send(.writeRequest(.init(handle: 0x10, value: [1, 0]))).0 == .writeResponse(.init()))
        s.connection.hasLongTermKey = true
        #expect(s.send(.writeRequest(.init(handle: 0x0D, value: [1, 0]))).0 == error(.writeRequest, 0x0D, .insufficientEncryption))
        s.connection.isEncrypted = true
        s.connection.keySize = 16
        let (response, events) = s.send(.writeRequest(.init(handle: 0x0D, value: [1, 0])))
        #expect(response == .writeResponse(.init()))
        #expect(events == [.subscriptionChanged(valueHandle: 0x0C, notify: true, indicate: false)])
    }

    @Test func writesAndSubscriptionsArePerConnection() {
        var db = database()
        var a = ATTServerConnection()
        var b = ATTServerConnection()
        // Central A subscribes to battery notifications; B does not.
        let out = ATTServer.handle(ATTPDU.writeRequest(.init(handle: 0x0D, value: [1, 0])).encoded, connection: &a, database: &db)
        #expect(out.response == [0x13])
        #expect(out.events == [.subscriptionChanged(valueHandle: 0x0C, notify: true, indicate: false)])
        #expect(a.isSubscribed(0x0C) && !b.isSubscribed(0x0C))
        // Each reads its own CCCD.
        #expect(ATTServer.handle(ATTPDU.readRequest(.init(handle: 0x0D)).encoded, connection: &b, database: &db).response == [0x0B, 0, 0])
        // Indications on a notify-only characteristic → CCCD improperly configured.
        let bad = ATTServer.handle(ATTPDU.writeRequest(.init(handle: 0x0D, value: [2, 0])).encoded, connection: &b, database: &db)
        #expect(bad.response == ATTPDU.errorResponse(.init(requestOpcode: .writeRequest, handle: 0x0D, error: .cccdImproperlyConfigured)).encoded)
        // A write command changes the value and reports it; nothing is answered.
        let command = ATTServer.handle(ATTPDU.writeCommand(.init(handle: 0x10, value: [9])).encoded, connection: &b, database: &db)
        #expect(command.response == nil && command.events == [.wrote(handle: 0x10, value: [9], withResponse: false)])
        #expect(db.attribute(0x10)?.value == [9])
    }

    @Test func longWritesAreAtomic() {
        var s = Server(db: database())
        let value = (0..<500).map { UInt8(truncatingIfNeeded: $0) }
        var offset = 0
        while offset < value.count {
            let chunk = Array(value[offset..<min(value.count, offset + 18)])
            #expect(s.send(.prepareWriteRequest(.init(handle: 0x10, offset: UInt16(offset), value: chunk))).0
                    == .prepareWriteResponse(.init(handle: 0x10, offset: UInt16(offset), value: chunk)))
            offset += 18
        }
        let (response, events) = s.send(.executeWriteRequest(.init(commit: true)))
        #expect(response == .executeWriteResponse(.init()))
        #expect(events == [.wrote(handle: 0x10, value: value, withResponse: true)])
        #expect(s.db.attribute(0x10)?.value == value)
        // A bad offset anywhere in the queue: nothing is written.
        _ = s.send(.prepareWriteRequest(.init(handle: 0x10, offset: 0, value: [1, 2, 3])))
        // The user description is read-only: refused at prepare time.
        #expect(s.send(.prepareWriteRequest(.init(handle: 0x11, offset: 0, value: [1]))).0 == error(.prepareWriteRequest, 0x11, .writeNotPermitted))
        _ = s.send(.prepareWriteRequest(.init(handle: 0x10, offset: 900, value: [1])))
        #expect(s.send(.executeWriteRequest(.init(commit: true))).0 == error(.executeWriteRequest, 0x10, .invalidOffset))
        #expect(s.db.attribute(0x10)?.value == value)
        // Over 512 bytes in total → Invalid Attribute Value Length.
        _ = s.send(.prepareWriteRequest(.init(handle: 0x10, offset: 500, value: Array(repeating: 0, count: 13))))
        #expect(s.send(.executeWriteRequest(.init(commit: true))).0 == error(.executeWriteRequest, 0x10, .invalidAttributeValueLength))
        // Cancel drops the queue.
        _ = s.send(.prepareWriteRequest(.init(handle: 0x10, offset: 0, value: [7])))
        #expect(s.send(.executeWriteRequest(.init(commit: false))).0 == .executeWriteResponse(.init()))
        #expect(s.db.attribute(0x10)?.value == value)
        // Queue full.
        s.connection.prepareQueueLimit = 2
        _ = s.send(.prepareWriteRequest(.init(handle: 0x10, offset: 0, value: [1])))
        _ = s.send(.prepareWriteRequest(.init(handle: 0x10, offset: 1, value: [1])))
        #expect(s.send(.prepareWriteRequest(.init(handle: 0x10, offset: 2, value: [1]))).0 == error(.prepareWriteRequest, 0x10, .prepareQueueFull))
    }

    @Test func readsAreCutToTheMTU() {
        var s = Server(db: database())
        _ = s.send(.writeRequest(.init(handle: 0x10, value: Array(repeating: 0xAB, count: 100))))
        // MTU 23: 22 bytes per read response.
        #expect(s.send(.readRequest(.init(handle: 0x10))).0 == .readResponse(.init(value: Array(repeating: 0xAB, count: 22))))
        #expect(s.send(.readBlobRequest(.init(handle: 0x10, offset: 88))).0 == .readBlobResponse(.init(value: Array(repeating: 0xAB, count: 12))))
        // Read Multiple concatenates; Read Multiple Variable prefixes lengths and truncates the last.
        #expect(s.send(.readMultipleRequest(.init(handles: [0x0C, 0x03]))).0 == .readMultipleResponse(.init(values: [87] + Array("Test".utf8))))
        #expect(s.send(.readMultipleVariableRequest(.init(handles: [0x0C, 0x10]))).0
                == .readMultipleVariableResponse(.init(entries: [.init([87]), .init(length: 100, value: Array(repeating: 0xAB, count: 17))])))
        #expect(s.send(.readMultipleRequest(.init(handles: [0x0C, 0x13]))).0 == error(.readMultipleRequest, 0x13, .insufficientAuthentication))
    }
}

@Suite struct ATTServerFuzzTests {
    /// Random PDUs (valid opcodes with random parameters, and random bytes) never trap the server, and every request
    /// gets exactly one answer while commands get none.
    @Test func randomPDUsAreAnsweredOrIgnored() {
        var db = GATTDatabase(services: [GATTServiceDefinition(uuid: 0x180F, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A19, properties: [.read, .write, .notify], permissions: [.readable, .writeable], value: [1]),
        ])])
        var connection = ATTServerConnection()
        var state: UInt64 = 42
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        let opcodes: [UInt8] = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20, 0x52, 0xD2, 0x1E, 0x3F, 0x7F, 0x01, 0x0B]
        var answered = 0
        for i in 0..<20_000 {
            let opcode = i % 3 == 0 ? UInt8(truncatingIfNeeded: next()) : opcodes[Int(next() % UInt64(opcodes.count))]
            let body = (0..<Int(next() % 24)).map { _ in UInt8(truncatingIfNeeded: next() % 4 == 0 ? 0 : next()) }
            let out = ATTServer.handle([opcode] + body, connection: &connection, database: &db)
            let op = ATTOpcode(rawValue: opcode)
            if op.isCommand || ATTOpcode.responses.contains(op) || op == .handleValueConfirmation
                || op == .handleValueNotification || op == .handleValueIndication || op == .multipleHandleValueNotification {
                #expect(out.response == nil, "no answer to \(op)")
            } else {
                #expect(out.response != nil, "an answer to \(op)")
                answered += 1
            }
        }
        #expect(answered > 5000)
    }

    /// Found by Fuzz/FuzzATTServer: a 37-byte Prepare Write Request on a link whose ATT_MTU is 23 was answered with a
    /// 37-byte Prepare Write Response (its value echoed), beyond the MTU. A part value longer than ATT_MTU - 5 now
    /// gets Invalid PDU and nothing is queued.
    @Test func preparedWritesLongerThanTheMTUGetInvalidPDU() {
        var db = ATTServerTests().database()
        var connection = ATTServerConnection()
        connection.isEncrypted = true
        connection.isAuthenticated = true
        connection.isSecureConnections = true
        // The fuzzer's request: Prepare Write Request, handle 0x000D, offset 0, 32 bytes of value.
        let request = [UInt8](hex: "16 0d 00 00 00 44 90 00 02 18 01 0d 00 00 00 00 00 00 08 16 0d 00 00 00 44 90 00 02 18 01 0d 0c 05 00 00 03 00"
            .filter { $0 != " " }) ?? []
        #expect(request.count == 37)
        let out = ATTServer.handle(request, connection: &connection, database: &db)
        #expect(out.response.flatMap { try? ATTPDU(bytes: $0) }
                == .errorResponse(.init(requestOpcode: .prepareWriteRequest, handle: 0, error: .invalidPDU)))
        // Nothing was queued: executing the queue writes nothing.
        let executed = ATTServer.handle([0x18, 0x01], connection: &connection, database: &db)
        #expect(executed.response == [0x19])
        #expect(executed.events.isEmpty)
        // The same request to the writable value, once the MTU allows it, is queued and echoed.
        connection.negotiated(mtu: 64)
        let accepted = ATTServer.handle([0x16, 0x10, 0x00] + request.dropFirst(3), connection: &connection, database: &db)
        #expect(accepted.response?.count == 37)
        #expect(accepted.response?.first == ATTOpcode.prepareWriteResponse.rawValue)
        // The largest part value at MTU 23 is 18 octets.
        connection.negotiated(mtu: 23)
        #expect(ATTServer.handle([0x16, 0x10, 0x00, 0x20, 0x00] + Array(repeating: 0x41, count: 18), connection: &connection, database: &db)
                .response?.count == 23)
        #expect(ATTServer.handle([0x16, 0x10, 0x00, 0x32, 0x00] + Array(repeating: 0x41, count: 19), connection: &connection, database: &db)
                .response == [0x01, 0x16, 0x00, 0x00, 0x04])
    }
}
