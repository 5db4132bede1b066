import BLE
import BLEProtocols
import BLETransport
import BLEWire

/// What a btsnoop capture shows of the GATT servers its host talked to as a client: the services, includes,
/// characteristics and descriptors the server declared in its answers, every value it gave (reads, long reads put
/// back together, Read By Type, notifications and indications), the errors it answered, its ATT MTU and the
/// advertising data it sent while the host scanned for it.
///
/// A capture holds HCI packets (see ``BTSnoopReader``), so it shows ATT in clear even on encrypted links. The
/// analysis follows each LE connection from its Connection Complete event to its Disconnection Complete, puts ACL
/// fragments back into L2CAP PDUs per connection and direction, and pairs each ATT request the host sent with the
/// response the peer returned (ATT allows one outstanding request per direction: Core 5.4, Vol 3, Part F, 3.3.2).
/// Servers are keyed by the peer's address: several connections to one device add to one ``Server``.
///
/// Only the peer's side is gathered: requests the capturing host *answered* (its own GATT server) are not.
/// Nothing in a capture is trusted: a packet that does not decode is counted in ``skipped`` with the reason, and the
/// analysis goes on.
public struct GATTCapture: Sendable {
    /// A service the server declared.
    public struct Service: Sendable, Hashable {
        /// The declaration's handle.
        public var start: AttributeHandle
        /// The End Group Handle.
        public var end: AttributeHandle
        /// The service UUID.
        public var uuid: BluetoothUUID
        /// Primary (0x2800) or secondary (0x2801).
        public var isPrimary: Bool
    }

    /// An include declaration the server answered (Read By Type 0x2802).
    public struct Include: Sendable, Hashable {
        /// The include declaration's handle.
        public var handle: AttributeHandle
        /// The included service's first handle.
        public var start: AttributeHandle
        /// The included service's end handle.
        public var end: AttributeHandle
        /// The included service's UUID when the declaration carries it (16-bit UUIDs only).
        public var uuid: BluetoothUUID?
    }

    /// A characteristic declaration the server answered (Read By Type 0x2803).
    public struct Characteristic: Sendable, Hashable {
        /// The declaration's handle.
        public var declaration: AttributeHandle
        /// The declared properties (the raw octet; see the BLE module's `CharacteristicProperties`).
        public var properties: UInt8
        /// The value's handle.
        public var valueHandle: AttributeHandle
        /// The characteristic UUID.
        public var uuid: BluetoothUUID
    }

    /// A value the server pushed.
    public struct Notification: Sendable, Hashable {
        /// The value's handle.
        public var handle: AttributeHandle
        /// The value.
        public var value: [UInt8]
        /// An indication (confirmed) rather than a notification.
        public var isIndication: Bool
        /// Microseconds since the connection that carried it completed.
        public var sinceConnection: Int64
    }

    /// Everything the capture shows of one server.
    public struct Server: Sendable {
        /// The peer's address as the connection event gave it.
        public var address: LEAddress
        /// The advertising data of the last connectable advertisement heard from this address before a connection.
        public var advertisingData: [UInt8]?
        /// The scan response data heard from this address.
        public var scanResponseData: [UInt8]?
        /// The server's Receive MTU from its Exchange MTU Response.
        public var mtu: UInt16?
        /// The services it declared, by handle.
        public var services: [Service] = []
        /// The include declarations it answered, by handle.
        public var includes: [Include] = []
        /// The characteristics it declared, by declaration handle.
        public var characteristics: [Characteristic] = []
        /// Attribute types from Find Information (descriptors, and any other attribute it listed).
        public var attributeTypes: [AttributeHandle: BluetoothUUID] = [:]
        /// Values it gave, whole as far as the capture shows them (a long read's blobs joined at their offsets).
        public var values: [AttributeHandle: [UInt8]] = [:]
        /// Errors it answered to reads (Read, Read Blob, Read By Type of one handle), by handle; a later successful
        /// read removes the entry.
        public var readErrors: [AttributeHandle: ATTErrorCode] = [:]
        /// The first security refusal (Insufficient Authentication, Insufficient Encryption, Encryption Key Size Too
        /// Short) a read or write of each handle met, kept when the host then paired and succeeded: the attribute needs
        /// an encrypted (with Insufficient Authentication after encryption, an authenticated) link.
        public var securityRefusals: [AttributeHandle: ATTErrorCode] = [:]
        /// Handles whose read was refused with Insufficient Authentication on a link the capture shows encrypted.
        public var needsAuthentication: Set<AttributeHandle> = []
        /// Errors it answered to Write Requests, by handle.
        public var writeErrors: [AttributeHandle: ATTErrorCode] = [:]
        /// Handles it accepted a Write Request for.
        public var acceptedWrites: Set<AttributeHandle> = []
        /// Notifications and indications in the order they came.
        public var notifications: [Notification] = []

        init(address: LEAddress) { self.address = address }

        /// The characteristic whose value is at `handle`.
        public func characteristic(valueHandle handle: AttributeHandle) -> Characteristic? {
            characteristics.first { $0.valueHandle == handle }
        }
    }

    /// The servers, in the order the capture first connected to them.
    public private(set) var servers: [Server] = []
    /// A record the analysis could not use.
    public struct Skipped: Sendable, Hashable, CustomStringConvertible {
        /// The record's index in the capture.
        public var record: Int
        /// What was wrong with it.
        public var reason: String
        /// "record N: reason".
        public var description: String { "record \(record): \(reason)" }
    }

    /// Packets the analysis could not use (a malformed event, a truncated PDU, a response with no request).
    public private(set) var skipped: [Skipped] = []

    /// Analyses a btsnoop file's bytes; throws when they are not a btsnoop capture.
    public init(btsnoop bytes: [UInt8]) throws(WireError) {
        self.init(records: try BTSnoopReader.parse(bytes))
    }

    /// Analyses capture records (host → controller is ``BTSnoopDirection/sent``).
    public init(records: [BTSnoopRecord]) {
        var analysis = Analysis()
        for (index, record) in records.enumerated() {
            analysis.take(record, index: index)
        }
        servers = analysis.order.compactMap { analysis.servers[$0] }
        skipped = analysis.skipped
    }
}

/// The analysis's running state.
private struct Analysis {
    struct Link {
        var peer: LEAddress
        var connectedAt: Int64
        /// ACL fragments being put back together, per direction.
        var sending: [UInt8] = []
        var receiving: [UInt8] = []
        /// The request the host sent and the peer has not answered yet.
        var pending: ATTPDU?
        /// Whether the capture shows the link encrypted (Encryption Change, on).
        var encrypted = false
    }

    var servers: [LEAddress: GATTCapture.Server] = [:]
    var order: [LEAddress] = []
    var links: [UInt16: Link] = [:]
    /// Advertising heard before a connection, by address (the connection event's address picks them).
    var heard: [BluetoothAddress: (advertising: [UInt8]?, scanResponse: [UInt8]?)] = [:]
    var skipped: [GATTCapture.Skipped] = []

    mutating func take(_ record: BTSnoopRecord, index: Int) {
        let packet: HCIPacket
        do {
            packet = try HCIPacket(h4: record.h4Bytes)
        } catch {
            skipped.append(.init(record: index, reason: "not an HCI packet: \(error.reason)"))
            return
        }
        switch packet {
        case .event(let event) where record.direction == .received:
            do {
                try take(try HCIEvent(packet: event), at: record.timestamp)
            } catch {
                skipped.append(.init(record: index, reason: "event 0x\([event.code.rawValue].hexString()): \(error.reason)"))
            }
        case .acl(let acl):
            take(acl, direction: record.direction, index: index, at: record.timestamp)
        default:
            break
        }
    }

    mutating func take(_ event: HCIEvent, at time: Int64) throws(WireError) {
        switch event {
        case .le(.connectionComplete(let e)) where e.status == .success:
            connect(e.handle.rawValue, LEAddress(e.peerAddress, type: e.peerAddressType), at: time)
        case .le(.enhancedConnectionComplete(let e)) where e.status == .success:
            connect(e.handle.rawValue, LEAddress(e.peerAddress, type: e.peerAddressType), at: time)
        case .disconnectionComplete(let e) where e.status == .success:
            links[e.handle.rawValue] = nil
        case .encryptionChange(let e) where e.status == .success:
            links[e.handle.rawValue]?.encrypted = e.encryptionEnabled != 0
        case .le(.advertisingReport(let e)):
            for r in e.reports {
                if r.eventType == .scanResponse {
                    heard[r.address, default: (nil, nil)].scanResponse = r.data
                } else if r.eventType.isConnectable {
                    heard[r.address, default: (nil, nil)].advertising = r.data
                }
            }
        case .le(.extendedAdvertisingReport(let e)):
            for r in e.reports where r.eventType.dataStatus == 0 {
                if r.eventType.contains(.scanResponse) {
                    heard[r.address, default: (nil, nil)].scanResponse = r.data
                } else if r.eventType.contains(.connectable) {
                    heard[r.address, default: (nil, nil)].advertising = r.data
                }
            }
        default:
            break
        }
    }

    mutating func connect(_ handle: UInt16, _ peer: LEAddress, at time: Int64) {
        links[handle] = Link(peer: peer, connectedAt: time)
        if servers[peer] == nil {
            servers[peer] = GATTCapture.Server(address: peer)
            order.append(peer)
        }
        if let advertising = heard[peer.address] {
            if let data = advertising.advertising { servers[peer]?.advertisingData = data }
            if let data = advertising.scanResponse { servers[peer]?.scanResponseData = data }
        }
    }

    mutating func take(_ acl: HCIACLPacket, direction: BTSnoopDirection, index: Int, at time: Int64) {
        let handle = acl.handle.rawValue
        // A connection the capture saw no event for (it started mid-connection): its peer is unknown.
        guard var link = links[handle] else { return }
        var buffer = direction == .sent ? link.sending : link.receiving
        if acl.boundary.isStart {
            if !buffer.isEmpty { skipped.append(.init(record: index, reason: "ACL handle \(handle): a new PDU began before the last one was complete")) }
            buffer = acl.data
        } else if buffer.isEmpty {
            skipped.append(.init(record: index, reason: "ACL handle \(handle): a continuation with no PDU begun"))
            return
        } else {
            buffer += acl.data
        }
        var pdu: [UInt8]? = nil
        if buffer.count >= 4 {
            let length = Int(buffer[0]) | Int(buffer[1]) << 8
            if buffer.count >= 4 + length {
                if buffer.count > 4 + length { skipped.append(.init(record: index, reason: "ACL handle \(handle): more data than the L2CAP length says")) }
                pdu = Array(buffer.prefix(4 + length))
                buffer = []
            }
        }
        if direction == .sent { link.sending = buffer } else { link.receiving = buffer }
        links[handle] = link
        guard let pdu else { return }
        let frame: L2CAPBasicFrame
        do {
            frame = try L2CAPBasicFrame(bytes: pdu)
        } catch {
            skipped.append(.init(record: index, reason: "L2CAP: \(error.reason)"))
            return
        }
        guard frame.channelID == .att else { return }
        let att: ATTPDU
        do {
            att = try ATTPDU(bytes: frame.payload)
        } catch {
            skipped.append(.init(record: index, reason: "ATT: \(error.reason)"))
            return
        }
        take(att, direction: direction, handle: handle, index: index, at: time)
    }

    mutating func take(_ pdu: ATTPDU, direction: BTSnoopDirection, handle: UInt16, index: Int, at time: Int64) {
        guard var link = links[handle] else { return }
        let peer = link.peer
        let since = time - link.connectedAt
        if direction == .sent {
            // Our requests to the peer's server; our own server's answers are not gathered.
            if pdu.isClientRequest { link.pending = pdu }
            links[handle] = link
            return
        }
        switch pdu {
        case .handleValueNotification(let n):
            record(peer) { $0.notifications.append(.init(handle: n.handle, value: n.value, isIndication: false, sinceConnection: since)) }
            return
        case .handleValueIndication(let n):
            record(peer) { $0.notifications.append(.init(handle: n.handle, value: n.value, isIndication: true, sinceConnection: since)) }
            return
        case .multipleHandleValueNotification(let n):
            record(peer) { server in
                for e in n.entries { server.notifications.append(.init(handle: e.handle, value: e.value, isIndication: false, sinceConnection: since)) }
            }
            return
        default:
            break
        }
        guard pdu.isServerResponse else { return }
        guard let request = link.pending else {
            skipped.append(.init(record: index, reason: "ATT: a response with no request outstanding"))
            return
        }
        link.pending = nil
        links[handle] = link
        let encrypted = link.encrypted
        record(peer) { server in Self.learn(&server, request: request, response: pdu, encrypted: encrypted) }
    }

    mutating func record(_ peer: LEAddress, _ change: (inout GATTCapture.Server) -> Void) {
        guard var server = servers[peer] else { return }
        change(&server)
        servers[peer] = server
    }

    /// What one request and its response show of the server.
    static func learn(_ server: inout GATTCapture.Server, request: ATTPDU, response: ATTPDU, encrypted: Bool) {
        switch (request, response) {
        case (.exchangeMTURequest, .exchangeMTUResponse(let r)):
            server.mtu = r.mtu
        case (.readByGroupTypeRequest(let q), .readByGroupTypeResponse(let r)):
            let primary = q.type == BluetoothUUID(0x2800)
            guard primary || q.type == BluetoothUUID(0x2801) else { return }
            for e in r.entries {
                guard let uuid = try? BluetoothUUID(littleEndian: e.value) else { continue }
                add(&server, GATTCapture.Service(start: e.handle, end: e.endGroupHandle, uuid: uuid, isPrimary: primary))
            }
        case (.findByTypeValueRequest(let q), .findByTypeValueResponse(let r)):
            guard q.type == 0x2800 || q.type == 0x2801, let uuid = try? BluetoothUUID(littleEndian: q.value) else { return }
            for range in r.handles {
                add(&server, GATTCapture.Service(start: range.start, end: range.end, uuid: uuid, isPrimary: q.type == 0x2800))
            }
        case (.readByTypeRequest(let q), .readByTypeResponse(let r)):
            for e in r.entries {
                if q.type == BluetoothUUID(0x2803) {
                    var reader = ByteReader(e.value)
                    guard let properties = try? reader.readUInt8("properties"),
                          let value = try? reader.readUInt16("value handle"),
                          let uuid = try? BluetoothUUID(littleEndian: reader.readRemaining()) else { continue }
                    let c = GATTCapture.Characteristic(declaration: e.handle, properties: properties,
                                                       valueHandle: AttributeHandle(rawValue: value), uuid: uuid)
                    server.characteristics.removeAll { $0.declaration == c.declaration }
                    server.characteristics.append(c)
                    server.characteristics.sort { $0.declaration < $1.declaration }
                } else if q.type == BluetoothUUID(0x2802) {
                    var reader = ByteReader(e.value)
                    guard let start = try? reader.readUInt16("start"), let end = try? reader.readUInt16("end") else { continue }
                    let uuid = reader.remainingCount == 2 ? (try? reader.readUInt16("uuid")).map { BluetoothUUID($0) } : nil
                    let include = GATTCapture.Include(handle: e.handle, start: AttributeHandle(rawValue: start),
                                                      end: AttributeHandle(rawValue: end), uuid: uuid)
                    server.includes.removeAll { $0.handle == include.handle }
                    server.includes.append(include)
                    server.includes.sort { $0.handle < $1.handle }
                } else {
                    // A read by characteristic UUID: the value (cut to the response's room) at its handle.
                    server.attributeTypes[e.handle] = q.type
                    if (server.values[e.handle]?.count ?? 0) <= e.value.count { server.values[e.handle] = e.value }
                }
            }
        case (.findInformationRequest, .findInformationResponse(let r)):
            for e in r.entries { server.attributeTypes[e.handle] = e.type }
        case (.readRequest(let q), .readResponse(let r)):
            // A later read replaces what an earlier one showed (blobs that follow extend it).
            server.values[q.handle] = r.value
            server.readErrors[q.handle] = nil
        case (.readBlobRequest(let q), .readBlobResponse(let r)):
            let known = server.values[q.handle] ?? []
            let offset = Int(q.offset)
            guard offset <= known.count else { return }
            server.values[q.handle] = Array(known.prefix(offset)) + r.value
        case (.readMultipleVariableRequest(let q), .readMultipleVariableResponse(let r)):
            for (handle, entry) in zip(q.handles, r.entries) where Int(entry.length) == entry.value.count {
                server.values[handle] = entry.value
            }
        case (.writeRequest(let q), .writeResponse):
            server.acceptedWrites.insert(q.handle)
            server.writeErrors[q.handle] = nil
        case (_, .errorResponse(let e)):
            let security: Set<ATTErrorCode> = [.insufficientAuthentication, .insufficientEncryption, .encryptionKeySizeTooShort]
            if security.contains(e.error), e.handle.rawValue != 0 {
                if server.securityRefusals[e.handle] == nil { server.securityRefusals[e.handle] = e.error }
                if e.error == .insufficientAuthentication && encrypted { server.needsAuthentication.insert(e.handle) }
            }
            switch request {
            case .readRequest(let q):
                server.readErrors[q.handle] = e.error
            case .readBlobRequest(let q) where q.offset == 0:
                server.readErrors[q.handle] = e.error
            case .readByTypeRequest(let q) where q.range.start == q.range.end && e.error != .attributeNotFound:
                server.readErrors[q.range.start] = e.error
            case .writeRequest(let q):
                server.writeErrors[q.handle] = e.error
            default:
                break   // Attribute Not Found ends a discovery; it declares nothing.
            }
        default:
            break
        }
    }

    static func add(_ server: inout GATTCapture.Server, _ service: GATTCapture.Service) {
        server.services.removeAll { $0.start == service.start }
        server.services.append(service)
        server.services.sort { $0.start < $1.start }
    }
}

extension ATTPDU {
    /// A request a client sends and a server answers (commands and confirmations are not).
    var isClientRequest: Bool {
        switch self {
        case .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest, .readRequest,
             .readBlobRequest, .readMultipleRequest, .readByGroupTypeRequest, .writeRequest, .prepareWriteRequest,
             .executeWriteRequest, .readMultipleVariableRequest:
            true
        default:
            false
        }
    }

    /// A server's answer to a request.
    var isServerResponse: Bool {
        switch self {
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse, .readByTypeResponse,
             .readResponse, .readBlobResponse, .readMultipleResponse, .readByGroupTypeResponse, .writeResponse,
             .prepareWriteResponse, .executeWriteResponse, .readMultipleVariableResponse:
            true
        default:
            false
        }
    }
}
