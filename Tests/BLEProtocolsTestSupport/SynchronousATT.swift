import BLEProtocols
import BLEWire

/// The ``ATTServer`` machine behind a synchronous transport: `answer` is the transport the GATT client procedures'
/// `run` takes, answering each request from `database` and recording it.
public final class SynchronousATTServer {
    public var database: GATTDatabase
    public var connection = ATTServerConnection()
    /// The requests answered since the MTU exchange.
    public private(set) var requests: [ATTPDU] = []

    /// A server for `database`; with `mtu`, the client exchanges that MTU first (the exchange is not recorded).
    public init(_ database: GATTDatabase, mtu: Int? = nil) throws {
        self.database = database
        if let mtu {
            var exchange = MTUExchange(clientMTU: mtu)
            _ = try exchange.run(answer)
            requests = []
        }
    }

    /// The server's response to `pdu`; a request that gets none (a command) fails the procedure.
    public func answer(_ pdu: ATTPDU) throws(GATTError) -> ATTPDU {
        requests.append(pdu)
        let output = ATTServer.handle(pdu.encoded, connection: &connection, database: &database)
        guard let bytes = output.response, let response = try? ATTPDU(bytes: bytes) else {
            throw GATTError(.malformedResponse, "no response")
        }
        return response
    }
}

/// A server that answers from a script, recording the requests; it fails the procedure when asked once too often.
public final class ScriptedATTServer {
    public private(set) var responses: [ATTPDU]
    public private(set) var requests: [ATTPDU] = []

    public init(_ responses: [ATTPDU]) { self.responses = responses }

    /// The next response of the script.
    public func answer(_ pdu: ATTPDU) throws(GATTError) -> ATTPDU {
        requests.append(pdu)
        guard !responses.isEmpty else { throw GATTError(.timeout, "script ran out") }
        return responses.removeFirst()
    }
}

extension ATTReadByTypeResponse.Entry {
    /// A characteristic declaration at `handle`: properties `properties` (Read by default), value at `value`, 16-bit
    /// type `uuid`.
    public static func declaration(
        _ handle: AttributeHandle, value: UInt16, uuid: UInt16 = 0x2A19, properties: UInt8 = 0x02
    ) -> Self {
        .init(handle: handle, value: [properties, UInt8(truncatingIfNeeded: value), UInt8(value >> 8),
                                      UInt8(truncatingIfNeeded: uuid), UInt8(uuid >> 8)])
    }
}

/// Discovery as a CoreBluetooth-style caller does it: services, then each service's characteristics, then each
/// characteristic's descriptors.
public func discoverPerService(_ answer: (ATTPDU) throws(GATTError) -> ATTPDU) throws -> [GATTDiscoveredService] {
    var services = PrimaryServiceDiscovery()
    var result: [GATTDiscoveredService] = []
    for service in try services.run(answer) {
        var characteristics = CharacteristicDiscovery(of: service)
        var entries: [GATTDiscoveredCharacteristic] = []
        for characteristic in try characteristics.run(answer) {
            var descriptors = DescriptorDiscovery(of: characteristic)
            entries.append(GATTDiscoveredCharacteristic(characteristic: characteristic, descriptors: try descriptors.run(answer)))
        }
        result.append(GATTDiscoveredService(service: service, characteristics: entries))
    }
    return result
}
