import BLEWire

/// One client's view of the server: MTU, security, its CCCD values and its prepared-write queue.
public struct ATTServerConnection: Sendable {
    /// The effective ATT_MTU.
    public internal(set) var mtu = ATT.defaultLEMTU
    /// The MTU this server offers (its Rx MTU).
    public var serverMTU = ATT.maximumMTU
    /// Whether the link is encrypted (gates encryption-required attributes).
    public var isEncrypted = false
    /// Whether the link is encrypted with an authenticated key.
    public var isAuthenticated = false
    /// Whether the link's key comes from LE Secure Connections.
    public var isSecureConnections = false
    /// The encryption key size of the link, in octets.
    public var keySize = 16
    /// Whether this side holds a key for the client (a bond): an unencrypted link then answers Insufficient
    /// Encryption, since the client can encrypt; without a key Insufficient Authentication (pair first).
    /// Core 5.4, Vol 3, Part C, 10.3.1.
    public var hasLongTermKey = false
    /// The smallest key size the server accepts for attributes that need encryption (Insufficient Encryption Key
    /// Size below it).
    public var minimumKeySize = 16
    /// CCCD bits per characteristic value handle (bit 0 notify, bit 1 indicate).
    public internal(set) var clientConfigurations: [AttributeHandle: UInt16] = [:] {
        didSet {
            // Rebuilt on a CCCD write (rare); read on every notification.
            var copy = SmallMap<AttributeHandle, UInt16>()
            for (handle, bits) in clientConfigurations { copy[handle] = bits }
            subscriptions = copy
        }
    }
    /// ``clientConfigurations`` again, for ``isSubscribed(_:indications:)``: found without hashing the handle.
    private var subscriptions = SmallMap<AttributeHandle, UInt16>()
    /// Most prepared writes queued at once; more answer Prepare Queue Full.
    public var prepareQueueLimit = 64
    var prepareQueue: [ATTPrepareWriteRequest] = []
    /// The client's Client Supported Features (bit 0 robust caching, bit 1 EATT, bit 2 multiple handle value
    /// notifications): what it wrote, bits it may never clear. Core 5.4, Vol 3, Part G, 7.2.
    public internal(set) var clientSupportedFeatures: UInt8 = 0
    /// Whether the client enabled Multiple Handle Value Notifications (bit 2 of Client Supported Features): only
    /// then may the server send it ATT_MULTIPLE_HANDLE_VALUE_NTF. Core 5.4, Vol 3, Part G, 7.2.
    public var multipleNotifications: Bool { clientSupportedFeatures & 0x04 != 0 }
    /// Whether this view is the client's on an Enhanced ATT bearer (``onEnhancedBearer(mtu:)``): its ATT_MTU is the
    /// L2CAP channel's, and ATT_EXCHANGE_MTU_REQ is refused (Core 5.4, Vol 3, Part F, 3.2.8 and 3.4.2.1).
    public private(set) var isEnhancedBearer = false
    /// Whether the client enabled robust caching (the server then tells it, with Database Out Of Sync, when the
    /// database changed under it). Core 5.4, Vol 3, Part G, 2.5.2.1.
    public var robustCaching: Bool { clientSupportedFeatures & 0x01 != 0 }
    /// Whether the client knows the database as it is. It becomes change-unaware when the database changes
    /// (``databaseChanged()``) and change-aware again when it confirms a Service Changed indication, or sends a
    /// request after reading the Database Hash or after being answered Database Out Of Sync. Only a client with
    /// ``robustCaching`` is refused for it. Core 5.4, Vol 3, Part G, 2.5.2.1.
    public internal(set) var isChangeAware = true
    /// Database Out Of Sync was sent since the client became change-unaware.
    var outOfSyncSent = false
    /// The client read the Database Hash since it became change-unaware.
    var readHashWhileUnaware = false

    /// A new client: default MTU, no subscriptions.
    public init() {}

    /// Records an MTU negotiated by an exchange this side initiated as client (ATT_MTU is per link).
    public mutating func negotiated(mtu: Int) { self.mtu = max(ATT.defaultLEMTU, min(mtu, serverMTU)) }

    /// The prepared writes queued on one ATT bearer: each bearer of a client has its own queue, so that a long write
    /// on one bearer and another on a second bearer never mix (an Execute Write commits its own bearer's queue only).
    public struct PreparedWrites: Sendable, Hashable {
        var queue: [ATTPrepareWriteRequest] = []
        /// An empty queue.
        public init() {}
        init(queue: [ATTPrepareWriteRequest]) { self.queue = queue }
        /// How many prepared writes wait.
        public var count: Int { queue.count }
    }

    /// This client as seen on one of its Enhanced ATT bearers: the same client (CCCDs, features, security), with the
    /// bearer's ATT_MTU and the bearer's own prepared writes. Hand what a request changed back with
    /// ``adopt(fromBearer:)``.
    public func onEnhancedBearer(mtu: Int, preparedWrites: PreparedWrites = PreparedWrites()) -> ATTServerConnection {
        var view = self
        view.mtu = max(ATT.defaultLEMTU, mtu)
        view.isEnhancedBearer = true
        view.prepareQueue = preparedWrites.queue
        return view
    }

    /// Takes what a request on an Enhanced ATT bearer changed in ``onEnhancedBearer(mtu:preparedWrites:)``'s view,
    /// keeping this link's own ATT_MTU and prepared writes; returns the bearer's prepared writes as the view left them.
    @discardableResult
    public mutating func adopt(fromBearer view: ATTServerConnection) -> PreparedWrites {
        let mtu = self.mtu, enhanced = isEnhancedBearer, queue = prepareQueue
        self = view
        self.mtu = mtu
        self.isEnhancedBearer = enhanced
        self.prepareQueue = queue
        return PreparedWrites(queue: view.prepareQueue)
    }

    /// Sets a client's CCCD bits for a characteristic (to carry a subscription across a database change).
    public mutating func setClientConfiguration(_ bits: UInt16, for valueHandle: AttributeHandle) {
        clientConfigurations[valueHandle] = bits == 0 ? nil : bits
    }

    /// The database changed under this client: it is change-unaware until it catches up.
    public mutating func databaseChanged() {
        isChangeAware = false
        outOfSyncSent = false
        readHashWhileUnaware = false
    }

    /// The client confirmed a Service Changed indication (or caught up otherwise): it is change-aware.
    public mutating func becameChangeAware() {
        isChangeAware = true
        outOfSyncSent = false
        readHashWhileUnaware = false
    }

    /// Restores what a bonded client set on an earlier connection: its Client Supported Features and whether it
    /// knows the database (Core 5.4, Vol 3, Part G, 2.5.2.1 and 7.2: both persist for clients with a trusted
    /// relationship).
    public mutating func restore(clientSupportedFeatures: UInt8, isChangeAware: Bool) {
        self.clientSupportedFeatures = clientSupportedFeatures
        if isChangeAware { becameChangeAware() } else { databaseChanged() }
    }

    /// Whether the client subscribed to notifications (or indications) of `valueHandle`.
    public func isSubscribed(_ valueHandle: AttributeHandle, indications: Bool = false) -> Bool {
        (subscriptions[valueHandle] ?? 0) & (indications ? 0x0002 : 0x0001) != 0
    }
}

/// What a request did, for the layers above.
public enum ATTServerEvent: Sendable, Hashable {
    /// A client wrote a characteristic value or descriptor.
    case wrote(handle: AttributeHandle, value: [UInt8], withResponse: Bool)
    /// A client changed a CCCD.
    case subscriptionChanged(valueHandle: AttributeHandle, notify: Bool, indicate: Bool)
    /// MTU changed.
    case mtuChanged(Int)
    /// The client confirmed an indication.
    case indicationConfirmed
}

/// The ATT server procedures over a ``GATTDatabase``, for one client. Core 5.4, Vol 3, Part F, 3.4 and Part G, 4.
///
/// Sans-I/O and synchronous: every request is answered at once, so a second request can never wait behind the first.
/// Errors are answered as the specification says: unknown request → Request Not Supported; malformed → Invalid PDU;
/// handle 0 or start > end → Invalid Handle; non-grouping type → Unsupported Group Type; offset past the end →
/// Invalid Offset; value too long → Invalid Attribute Value Length; queue full → Prepare Queue Full; unknown commands
/// are ignored.
public enum ATTServer {
    /// The reply to a PDU (if any) and what it changed.
    public struct Output: Sendable, Hashable {
        /// The PDU to send back, if the input needs an answer.
        public var response: [UInt8]?
        /// What the PDU changed.
        public var events: [ATTServerEvent]
        /// When the PDU touches attributes the application answers: what to ask it. The response comes from
        /// ``ATTServer/complete(_:with:connection:database:)`` once it answered.
        public var pending: Pending?

        /// Creates an output.
        public init(response: [UInt8]?, events: [ATTServerEvent], pending: Pending? = nil) {
            self.response = response
            self.events = events
            self.pending = pending
        }

        /// Whether the response is an Error Response refusing for the link's security (Insufficient Authentication,
        /// Insufficient Encryption, Encryption Key Size Too Short): a host whose view of the link's security may lag
        /// checks it and handles the PDU again.
        public var refusesForSecurity: Bool {
            guard let response, response.count == 5, response[0] == ATTOpcode.errorResponse.rawValue else { return false }
            let code = ATTErrorCode(rawValue: response[4])
            return code == .insufficientAuthentication || code == .insufficientEncryption || code == .encryptionKeySizeTooShort
        }
    }

    /// Handles one PDU from the client.
    public static func handle(_ bytes: [UInt8], connection: inout ATTServerConnection, database: inout GATTDatabase) -> Output {
        guard let first = bytes.first else { return Output(response: nil, events: []) }
        let opcode = ATTOpcode(rawValue: first)
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU(bytes: bytes)
        } catch {
            // A malformed request gets Invalid PDU; anything else malformed (a command, a response, a notification,
            // a confirmation) is dropped: only requests are answered. Core 5.4, Vol 3, Part F, 3.4.1.1.
            guard opcode.isRequest else { return Output(response: nil, events: []) }
            return output(fail(opcode, 0, .invalidPDU))
        }
        if connection.robustCaching, !connection.isChangeAware, let refusal = changeUnawareGate(pdu, &connection) { return refusal }
        var events: [ATTServerEvent] = []
        let response: ATTPDU?
        switch pdu {
        case .exchangeMTURequest where connection.isEnhancedBearer:
            // An Enhanced ATT bearer's MTU is its channel's: no exchange there. Core 5.4, Vol 3, Part F, 3.4.2.1.
            response = fail(.exchangeMTURequest, 0, .requestNotSupported)
        case .exchangeMTURequest(let r):
            let client = max(Int(r.mtu), ATT.defaultLEMTU)
            connection.mtu = min(client, connection.serverMTU)
            events.append(.mtuChanged(connection.mtu))
            response = .exchangeMTUResponse(.init(mtu: UInt16(connection.serverMTU)))
        case .findInformationRequest(let r):
            response = findInformation(r, connection, database)
        case .findByTypeValueRequest(let r):
            response = findByTypeValue(r, connection, database)
        case .readByTypeRequest(let r):
            return readByType(r, connection, database)
        case .readRequest(let r):
            if let pending = applicationRead(r.handle, offset: 0, opcode: .readRequest, connection, database) { return pending }
            response = read(r.handle, offset: 0, blob: false, opcode: .readRequest, connection, database)
        case .readBlobRequest(let r):
            if let pending = applicationRead(r.handle, offset: Int(r.offset), opcode: .readBlobRequest, connection, database) { return pending }
            response = read(r.handle, offset: Int(r.offset), blob: true, opcode: .readBlobRequest, connection, database)
        case .readMultipleRequest(let r):
            return readMultiple(r.handles, variable: false, connection, database)
        case .readMultipleVariableRequest(let r):
            return readMultiple(r.handles, variable: true, connection, database)
        case .readByGroupTypeRequest(let r):
            response = readByGroupType(r, connection, database)
        case .writeRequest(let r):
            if let pending = applicationWrite(r.handle, r.value, withResponse: true, connection, database) { return pending }
            if let failure = write(r.handle, r.value, withResponse: true, &connection, &database, &events) {
                response = .errorResponse(.init(requestOpcode: .writeRequest, handle: r.handle, error: failure))
            } else {
                response = .writeResponse(.init())
            }
        case .writeCommand(let r):
            if let pending = applicationWrite(r.handle, r.value, withResponse: false, connection, database) { return pending }
            _ = write(r.handle, r.value, withResponse: false, &connection, &database, &events)
            response = nil
        case .signedWriteCommand:
            // No signing keys without pairing: a signed write cannot be verified and is dropped.
            response = nil
        case .prepareWriteRequest(let r):
            response = prepareWrite(r, &connection, database)
        case .executeWriteRequest(let r):
            return executeWrite(r, &connection, &database)
        case .handleValueConfirmation:
            events.append(.indicationConfirmed)
            response = nil
        case .unknown(let opcode, _):
            response = pdu.needsResponse
                ? .errorResponse(.init(requestOpcode: opcode, handle: 0, error: .requestNotSupported)) : nil
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse, .readByTypeResponse,
             .readResponse, .readBlobResponse, .readMultipleResponse, .readByGroupTypeResponse, .writeResponse,
             .prepareWriteResponse, .executeWriteResponse, .handleValueNotification, .handleValueIndication,
             .readMultipleVariableResponse, .multipleHandleValueNotification:
            // Client-side PDUs are not the server's to answer.
            response = nil
        }
        return Output(response: response?.encoded, events: events)
    }

    /// What a change-unaware client with robust caching gets instead of service (Core 5.4, Vol 3, Part G, 2.5.2.1):
    /// `nil` to serve the PDU. A request after the client read the Database Hash or was answered Database Out Of
    /// Sync makes it change-aware and is served; commands are ignored; requests at attribute handles (reads, writes,
    /// prepared writes and their execution) and Read By Type of other types than include or characteristic
    /// declarations over less than the whole handle range are answered Database Out Of Sync. Discovery and the read
    /// of the Database Hash over the whole range are served.
    static func changeUnawareGate(_ pdu: ATTPDU, _ c: inout ATTServerConnection) -> Output? {
        let opcode = pdu.opcode
        if opcode.isCommand { return Output(response: nil, events: []) }
        guard opcode.isRequest else { return nil }
        if c.outOfSyncSent || c.readHashWhileUnaware {
            c.becameChangeAware()
            return nil
        }
        let handle: AttributeHandle?
        switch pdu {
        case .readRequest(let r): handle = r.handle
        case .readBlobRequest(let r): handle = r.handle
        case .readMultipleRequest(let r): handle = r.handles.first ?? 0
        case .readMultipleVariableRequest(let r): handle = r.handles.first ?? 0
        case .writeRequest(let r): handle = r.handle
        case .prepareWriteRequest(let r): handle = r.handle
        case .executeWriteRequest: handle = 0
        case .readByTypeRequest(let r):
            let discovery = r.type == BluetoothUUID(0x2802) || r.type == BluetoothUUID(0x2803)
            let whole = r.range.start == 0x0001 && r.range.end == 0xFFFF
            if discovery || whole {
                if r.type == BluetoothUUID(0x2B2A) { c.readHashWhileUnaware = true }
                handle = nil
            } else {
                handle = r.range.start
            }
        default: handle = nil
        }
        guard let handle else { return nil }
        c.outOfSyncSent = true
        return output(fail(opcode, handle, .databaseOutOfSync))
    }

    static func fail(_ opcode: ATTOpcode, _ handle: AttributeHandle, _ code: ATTErrorCode) -> ATTPDU {
        .errorResponse(.init(requestOpcode: opcode, handle: handle, error: code))
    }

    /// The access error for reading (`write == false`) or writing an attribute, if any. Core 5.4, Vol 3, Part C,
    /// 10.3.1 and Part F, 4: an unencrypted link answers Insufficient Authentication when the server holds no key for
    /// the client (it must pair; this does not mean MITM is required) and Insufficient Encryption when it does;
    /// an encrypted link whose key is unauthenticated (or not Secure Connections, where required) answers Insufficient
    /// Authentication; a key shorter than the server's minimum answers Insufficient Encryption Key Size.
    static func accessError(_ a: GATTAttribute, write: Bool, _ c: ATTServerConnection) -> ATTErrorCode? {
        let p = a.permissions
        guard p.contains(write ? .writeable : .readable) else { return write ? .writeNotPermitted : .readNotPermitted }
        let authentication = p.contains(write ? .writeAuthenticationRequired : .readAuthenticationRequired)
        let secureConnections = p.contains(.secureConnectionsRequired)
        let encryption = authentication || secureConnections || p.contains(write ? .writeEncryptionRequired : .readEncryptionRequired)
        // A value that is refused on every permitted read (``GATTAttribute/readError``) answers that error once the
        // permissions are met, as the device that refused it did.
        guard encryption else { return write ? nil : a.readError }
        guard c.isEncrypted else { return c.hasLongTermKey ? .insufficientEncryption : .insufficientAuthentication }
        if (authentication || secureConnections) && !c.isAuthenticated { return .insufficientAuthentication }
        if secureConnections && !c.isSecureConnections { return .insufficientAuthentication }
        if c.keySize < c.minimumKeySize { return .encryptionKeySizeTooShort }
        return write ? nil : a.readError
    }

    /// The value a client reads: CCCDs are per client.
    static func value(of a: GATTAttribute, _ c: ATTServerConnection) -> [UInt8] {
        if case .clientConfiguration(let valueHandle, _) = a.role {
            let bits = c.clientConfigurations[valueHandle] ?? 0
            return [UInt8(truncatingIfNeeded: bits), UInt8(bits >> 8)]
        }
        if a.type == BluetoothUUID(0x2B29), case .characteristicValue = a.role { return [c.clientSupportedFeatures] }
        return a.value
    }

    static func findInformation(_ r: ATTFindInformationRequest, _ c: ATTServerConnection, _ db: GATTDatabase) -> ATTPDU {
        guard r.range.isValid else { return fail(.findInformationRequest, r.range.start, .invalidHandle) }
        var entries: [ATTFindInformationResponse.Entry] = []
        var short: Bool?
        for a in db.attributes(in: r.range.start...r.range.end) {
            let isShort = a.type.uint16 != nil
            if short == nil { short = isShort }
            guard isShort == short else { break }
            if 2 + (entries.count + 1) * (2 + (isShort ? 2 : 16)) > c.mtu { break }
            entries.append(.init(handle: a.handle, type: a.type))
        }
        return entries.isEmpty ? fail(.findInformationRequest, r.range.start, .attributeNotFound)
            : .findInformationResponse(.init(entries: entries))
    }

    static func findByTypeValue(_ r: ATTFindByTypeValueRequest, _ c: ATTServerConnection, _ db: GATTDatabase) -> ATTPDU {
        guard r.range.isValid else { return fail(.findByTypeValueRequest, r.range.start, .invalidHandle) }
        let type = BluetoothUUID(r.type)
        var found: [ATTHandleRange] = []
        for a in db.attributes(in: r.range.start...r.range.end) where a.type == type && accessError(a, write: false, c) == nil && value(of: a, c) == r.value {
            if 1 + (found.count + 1) * 4 > c.mtu { break }
            let end: AttributeHandle = if case .serviceDeclaration(let e) = a.role { e } else { a.handle }
            found.append(ATTHandleRange(start: a.handle, end: end))
        }
        return found.isEmpty ? fail(.findByTypeValueRequest, r.range.start, .attributeNotFound)
            : .findByTypeValueResponse(.init(handles: found))
    }

    static func readByType(_ r: ATTReadByTypeRequest, _ c: ATTServerConnection, _ db: GATTDatabase) -> Output {
        guard r.range.isValid else { return output(fail(.readByTypeRequest, r.range.start, .invalidHandle)) }
        var entries: [ATTReadByTypeResponse.Entry] = []
        let limit = readByTypeValueLimit(c)
        for a in db.attributes(in: r.range.start...r.range.end) where a.type == r.type {
            if let failure = accessError(a, write: false, c) {
                // The first matching attribute decides: an error if nothing was collected yet, else stop there.
                return output(entries.isEmpty ? fail(.readByTypeRequest, a.handle, failure) : .readByTypeResponse(.init(entries: entries)))
            }
            if a.source == .application {
                // Values the application answers go one to a response: ask for the first, stop before a later one.
                guard entries.isEmpty else { break }
                return Output(response: nil, events: [], pending: Pending(requests: [.read(handle: a.handle, offset: 0)], needsResponse: true,
                                                                          finish: .readByType(handle: a.handle)))
            }
            let v = Array(value(of: a, c).prefix(limit))
            if let first = entries.first, first.value.count != v.count { break }
            if 2 + (entries.count + 1) * (2 + v.count) > c.mtu { break }
            entries.append(.init(handle: a.handle, value: v))
        }
        return output(entries.isEmpty ? fail(.readByTypeRequest, r.range.start, .attributeNotFound) : .readByTypeResponse(.init(entries: entries)))
    }

    /// The longest value one Read By Type Response entry carries.
    static func readByTypeValueLimit(_ c: ATTServerConnection) -> Int { min(c.mtu - 4, 253) }

    static func output(_ pdu: ATTPDU?) -> Output { Output(response: pdu?.encoded, events: []) }

    static func read(_ handle: AttributeHandle, offset: Int, blob: Bool, opcode: ATTOpcode, _ c: ATTServerConnection, _ db: GATTDatabase) -> ATTPDU {
        guard handle != 0, let a = db.attribute(handle) else { return fail(opcode, handle, .invalidHandle) }
        if let failure = accessError(a, write: false, c) { return fail(opcode, handle, failure) }
        let v = value(of: a, c)
        guard offset <= v.count else { return fail(opcode, handle, .invalidOffset) }
        let slice = Array(v[offset..<min(v.count, offset + c.mtu - 1)])
        return blob ? .readBlobResponse(.init(value: slice)) : .readResponse(.init(value: slice))
    }

    static func readMultiple(_ handles: [AttributeHandle], variable: Bool, _ c: ATTServerConnection, _ db: GATTDatabase) -> Output {
        let opcode: ATTOpcode = variable ? .readMultipleVariableRequest : .readMultipleRequest
        var values: [AttributeHandle: [UInt8]] = [:]
        var asked: [ATTApplicationRequest] = []
        for handle in handles {
            guard handle != 0, let a = db.attribute(handle) else { return output(fail(opcode, handle, .invalidHandle)) }
            if let failure = accessError(a, write: false, c) { return output(fail(opcode, handle, failure)) }
            if a.source == .application {
                if !asked.contains(.read(handle: handle, offset: 0)) { asked.append(.read(handle: handle, offset: 0)) }
            } else {
                values[handle] = value(of: a, c)
            }
        }
        guard asked.isEmpty else {
            return Output(response: nil, events: [], pending: Pending(requests: asked, needsResponse: true,
                                                                      finish: .readMultiple(handles: handles, values: values, variable: variable)))
        }
        return output(composeMultiple(handles.map { values[$0] ?? [] }, variable: variable, c))
    }

    /// A Read Multiple (Variable) Response of `values`, cut to the MTU.
    static func composeMultiple(_ values: [[UInt8]], variable: Bool, _ c: ATTServerConnection) -> ATTPDU {
        let room = c.mtu - 1
        if variable {
            var entries: [ATTReadMultipleVariableResponse.Entry] = []
            var used = 0
            for v in values where used + 2 <= room {
                let take = min(v.count, room - used - 2)
                entries.append(.init(length: UInt16(truncatingIfNeeded: v.count), value: Array(v.prefix(take))))
                used += 2 + take
            }
            return .readMultipleVariableResponse(.init(entries: entries))
        }
        return .readMultipleResponse(.init(values: Array(values.joined().prefix(room))))
    }

    static func readByGroupType(_ r: ATTReadByGroupTypeRequest, _ c: ATTServerConnection, _ db: GATTDatabase) -> ATTPDU {
        guard r.range.isValid else { return fail(.readByGroupTypeRequest, r.range.start, .invalidHandle) }
        guard r.type == BluetoothUUID(0x2800) || r.type == BluetoothUUID(0x2801) else {
            return fail(.readByGroupTypeRequest, r.range.start, .unsupportedGroupType)
        }
        var entries: [ATTReadByGroupTypeResponse.Entry] = []
        for a in db.attributes(in: r.range.start...r.range.end) where a.type == r.type {
            guard case .serviceDeclaration(let end) = a.role else { continue }
            if let first = entries.first, first.value.count != a.value.count { break }
            if 2 + (entries.count + 1) * (4 + a.value.count) > c.mtu { break }
            entries.append(.init(handle: a.handle, endGroupHandle: end, value: a.value))
        }
        return entries.isEmpty ? fail(.readByGroupTypeRequest, r.range.start, .attributeNotFound)
            : .readByGroupTypeResponse(.init(entries: entries))
    }

    /// Applies a write; returns the ATT error, if any.
    static func write(_ handle: AttributeHandle, _ value: [UInt8], withResponse: Bool, _ c: inout ATTServerConnection,
                      _ db: inout GATTDatabase, _ events: inout [ATTServerEvent]) -> ATTErrorCode? {
        guard handle != 0, let a = db.attribute(handle) else { return .invalidHandle }
        if a.type == BluetoothUUID(0x2B29), case .characteristicValue = a.role {
            return writeClientSupportedFeatures(a, value, &c)
        }
        guard case .clientConfiguration(let valueHandle, let properties) = a.role else {
            if let failure = writeError(a, value, withResponse: withResponse, c) { return failure }
            db.setValue(value, for: handle)
            events.append(.wrote(handle: handle, value: value, withResponse: withResponse))
            return nil
        }
        if let failure = accessError(a, write: true, c) { return failure }
        guard value.count == 2 else { return .invalidAttributeValueLength }
        let bits = UInt16(value[0]) | UInt16(value[1]) << 8
        if bits & 0x0001 != 0 && !properties.contains(.notify) || bits & 0x0002 != 0 && !properties.contains(.indicate)
            || bits & ~0x0003 != 0 {
            return .cccdImproperlyConfigured
        }
        c.setClientConfiguration(bits, for: valueHandle)
        events.append(.subscriptionChanged(valueHandle: valueHandle, notify: bits & 1 != 0, indicate: bits & 2 != 0))
        return nil
    }

    /// The features this server knows a client can support: robust caching, EATT, multiple handle value
    /// notifications. Core 5.4, Vol 3, Part G, 7.2.
    static let knownClientFeatures: UInt8 = 0x07

    /// A write of Client Supported Features: one octet per client, known bits only, and a bit once set is never
    /// cleared (Value Not Allowed). Enabling robust caching makes the client change-aware. Core 5.4, Vol 3, Part G, 7.2.
    static func writeClientSupportedFeatures(_ a: GATTAttribute, _ value: [UInt8], _ c: inout ATTServerConnection) -> ATTErrorCode? {
        if let failure = accessError(a, write: true, c) { return failure }
        guard value.count == 1 else { return .invalidAttributeValueLength }
        let bits = value[0] & knownClientFeatures
        guard bits & c.clientSupportedFeatures == c.clientSupportedFeatures else { return .valueNotAllowed }
        let enablesCaching = bits & 0x01 != 0 && !c.robustCaching
        c.clientSupportedFeatures = bits
        if enablesCaching { c.becameChangeAware() }
        // The GATT service's own state: nothing for the application to hear about.
        return nil
    }

    static func prepareWrite(_ r: ATTPrepareWriteRequest, _ c: inout ATTServerConnection, _ db: GATTDatabase) -> ATTPDU {
        // The response echoes the part value, and no PDU may exceed ATT_MTU: a part value is at most ATT_MTU - 5
        // octets (Core 5.4, Vol 3, Part F, 3.4.6.1-2); a longer request is malformed.
        guard 5 + r.value.count <= c.mtu else { return fail(.prepareWriteRequest, 0, .invalidPDU) }
        guard r.handle != 0, let a = db.attribute(r.handle) else { return fail(.prepareWriteRequest, r.handle, .invalidHandle) }
        if let failure = accessError(a, write: true, c) { return fail(.prepareWriteRequest, r.handle, failure) }
        guard c.prepareQueue.count < c.prepareQueueLimit else { return fail(.prepareWriteRequest, r.handle, .prepareQueueFull) }
        c.prepareQueue.append(r)
        return .prepareWriteResponse(.init(handle: r.handle, offset: r.offset, value: r.value))
    }

    /// Executes (atomically: all values are checked before any is written) or cancels the prepared writes. Parts for
    /// attributes the application answers go to it as one set; the stored ones are written only if it accepts.
    static func executeWrite(_ r: ATTExecuteWriteRequest, _ c: inout ATTServerConnection, _ db: inout GATTDatabase) -> Output {
        let queue = c.prepareQueue
        c.prepareQueue = []
        guard r.commit else { return output(.executeWriteResponse(.init())) }
        var pending: [AttributeHandle: [UInt8]] = [:]
        var order: [AttributeHandle] = []
        var applicationParts: [ATTPrepareWriteRequest] = []
        for p in queue {
            if db.attribute(p.handle)?.source == .application {
                applicationParts.append(p)
                continue
            }
            var v = pending[p.handle] ?? db.attribute(p.handle)?.value ?? []
            if pending[p.handle] == nil { order.append(p.handle) }
            let offset = Int(p.offset)
            guard offset <= v.count else { return output(fail(.executeWriteRequest, p.handle, .invalidOffset)) }
            v.replaceSubrange(offset..<min(v.count, offset + p.value.count), with: p.value)
            guard v.count <= ATT.maximumAttributeValueLength else { return output(fail(.executeWriteRequest, p.handle, .invalidAttributeValueLength)) }
            pending[p.handle] = v
        }
        // Every stored value is valid: check them all against a scratch copy (CCCD rules are checked per value).
        var scratch = db
        var scratchConnection = c
        var events: [ATTServerEvent] = []
        for handle in order {
            if let failure = write(handle, pending[handle] ?? [], withResponse: true, &scratchConnection, &scratch, &events) {
                return output(fail(.executeWriteRequest, handle, failure))
            }
        }
        if let first = applicationParts.first {
            return Output(response: nil, events: [], pending: Pending(requests: [.preparedWrites(applicationParts)], needsResponse: true,
                                                                      finish: .execute(order: order, values: pending, firstHandle: first.handle)))
        }
        db = scratch
        c = scratchConnection
        return Output(response: ATTPDU.executeWriteResponse(.init()).encoded, events: events)
    }
}
