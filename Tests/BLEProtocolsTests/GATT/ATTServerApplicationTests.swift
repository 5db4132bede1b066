import BLEProtocols
import BLEWire
import Testing

/// Attributes the application answers: the server asks, the application answers (later, or with an error), and
/// only then does the response exist. Driven synchronously.
@Suite struct ATTServerApplicationTests {
    static let custom = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0") ?? 0
    static let counter = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF8") ?? 0
    static let guarded = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF9") ?? 0

    /// GAP 0x0001–0x0005, GATT 0x0006–0x0009, custom 0x000A–: stored 0x000C, counter 0x000E (application),
    /// guarded 0x0010 (application, writable).
    static func database() -> GATTDatabase {
        GATTDatabase(deviceName: "App", services: [
            GATTServiceDefinition(uuid: custom, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A29, properties: [.read, .write], permissions: [.readable, .writeable], value: Array("stored".utf8)),
                GATTCharacteristicDefinition(uuid: counter, properties: .read, source: .application),
                GATTCharacteristicDefinition(uuid: guarded, properties: [.read, .write, .writeWithoutResponse],
                                             permissions: [.readable, .writeable], source: .application),
            ]),
        ])
    }

    struct Server {
        var database = ATTServerApplicationTests.database()
        var connection = ATTServerConnection()
        mutating func handle(_ pdu: ATTPDU) -> ATTServer.Output {
            ATTServer.handle(pdu.encoded, connection: &connection, database: &database)
        }
        mutating func complete(_ pending: ATTServer.Pending?, _ answers: [ATTApplicationAnswer]) -> ATTServer.Output? {
            guard let pending else { return nil }
            return ATTServer.complete(pending, with: answers, connection: &connection, database: &database)
        }
    }

    func decode(_ output: ATTServer.Output?) -> ATTPDU? { output?.response.flatMap { try? ATTPDU(bytes: $0) } }

    @Test func readsAskTheApplicationAndAnswerWithItsValue() throws {
        var server = Server()
        let counter = try #require(server.database.valueHandle(of: Self.counter))
        let read = server.handle(.readRequest(.init(handle: counter)))
        #expect(read.response == nil)
        #expect(read.pending?.requests == [.read(handle: counter, offset: 0)])
        #expect(decode(server.complete(read.pending, [.value([7, 0, 0, 0])])) == .readResponse(.init(value: [7, 0, 0, 0])))
        // A long value is cut to ATT_MTU − 1; the blob asks from its offset.
        let long = server.complete(read.pending, [.value(Array(repeating: 1, count: 40))])
        #expect(decode(long) == .readResponse(.init(value: Array(repeating: 1, count: 22))))
        let blob = server.handle(.readBlobRequest(.init(handle: counter, offset: 22)))
        #expect(blob.pending?.requests == [.read(handle: counter, offset: 22)])
        #expect(decode(server.complete(blob.pending, [.value(Array(repeating: 1, count: 18))])) == .readBlobResponse(.init(value: Array(repeating: 1, count: 18))))
        // An application error reaches the client as is.
        let refused = server.complete(read.pending, [.error(ATTErrorCode(rawValue: 0x80))])
        #expect(decode(refused) == .errorResponse(.init(requestOpcode: .readRequest, handle: counter, error: ATTErrorCode(rawValue: 0x80))))
        // Permissions are checked before the application is asked: the counter is not writable.
        #expect(server.handle(.writeRequest(.init(handle: counter, value: [1]))).pending == nil)
    }

    @Test func writesAreAppliedOnlyWhenTheApplicationAccepts() throws {
        var server = Server()
        let guarded = try #require(server.database.valueHandle(of: Self.guarded))
        let write = server.handle(.writeRequest(.init(handle: guarded, value: [1, 2])))
        #expect(write.pending?.requests == [.write(handle: guarded, value: [1, 2], withResponse: true)])
        let completed = server.complete(write.pending, [.accepted])
        let accepted = try #require(completed)
        #expect(decode(accepted) == .writeResponse(.init()))
        #expect(accepted.events == [.wrote(handle: guarded, value: [1, 2], withResponse: true)])
        let completedWithError = server.complete(write.pending, [.error(ATTErrorCode(rawValue: 0x80))])
        let refused = try #require(completedWithError)
        #expect(decode(refused) == .errorResponse(.init(requestOpcode: .writeRequest, handle: guarded, error: ATTErrorCode(rawValue: 0x80))))
        #expect(refused.events.isEmpty)
        // A Write Command asks too, and is never answered.
        let command = server.handle(.writeCommand(.init(handle: guarded, value: [3])))
        #expect(command.pending?.needsResponse == false)
        #expect(server.complete(command.pending, [.error(.unlikelyError)])?.response == nil)
    }

    @Test func readByTypeAndReadMultipleMixStoredAndApplicationValues() throws {
        var server = Server()
        server.connection.negotiated(mtu: 247)
        let stored = try #require(server.database.valueHandle(of: 0x2A29))
        let counter = try #require(server.database.valueHandle(of: Self.counter))
        let multiple = server.handle(.readMultipleVariableRequest(.init(handles: [stored, counter])))
        #expect(multiple.pending?.requests == [.read(handle: counter, offset: 0)])
        #expect(decode(server.complete(multiple.pending, [.value([9])]))
                == .readMultipleVariableResponse(.init(entries: [.init(Array("stored".utf8)), .init([9])])))
        let byType = server.handle(.readByTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: Self.counter)))
        #expect(decode(server.complete(byType.pending, [.value([5])])) == .readByTypeResponse(.init(entries: [.init(handle: counter, value: [5])])))
    }

    @Test func preparedWritesReachTheApplicationAsOneSetAllOrNothing() throws {
        var server = Server()
        let stored = try #require(server.database.valueHandle(of: 0x2A29))
        let guarded = try #require(server.database.valueHandle(of: Self.guarded))
        for pdu in [ATTPrepareWriteRequest(handle: stored, offset: 0, value: Array("new".utf8)),
                    ATTPrepareWriteRequest(handle: guarded, offset: 0, value: [1, 2]),
                    ATTPrepareWriteRequest(handle: guarded, offset: 2, value: [3])] {
            #expect(decode(server.handle(.prepareWriteRequest(pdu))) == .prepareWriteResponse(.init(handle: pdu.handle, offset: pdu.offset, value: pdu.value)))
        }
        let execute = server.handle(.executeWriteRequest(.init(commit: true)))
        #expect(execute.pending?.requests == [.preparedWrites([.init(handle: guarded, offset: 0, value: [1, 2]), .init(handle: guarded, offset: 2, value: [3])])])
        // Refused: nothing is written, the stored value included.
        let refused = server.complete(execute.pending, [.error(ATTErrorCode(rawValue: 0x81))])
        #expect(decode(refused) == .errorResponse(.init(requestOpcode: .executeWriteRequest, handle: guarded, error: ATTErrorCode(rawValue: 0x81))))
        #expect(server.database.attribute(stored)?.value == Array("stored".utf8))
        // Accepted: the stored part is written too (a prepared write patches the value from its offset).
        let accepted = server.complete(execute.pending, [.accepted])
        #expect(decode(accepted) == .executeWriteResponse(.init()))
        #expect(server.database.attribute(stored)?.value == Array("newred".utf8))
    }
}
